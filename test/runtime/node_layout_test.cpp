// node_layout_test - treePath, the walk from a red-black tree node to its
// root that names the node's zone (runtime/src/node_layout.h), on trees
// laid out by hand in blocks of the window: the path it gives, and what it
// refuses (a node out of the window, a loop, a path too deep).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "defero/defero.h"
#include "node_layout.h"

namespace {

/// libstdc++'s _Rb_tree_node_base.
struct RbNode {
  int color;
  RbNode *parent, *left, *right;
};

/// A block of the window (16-byte aligned), zeroed.
char *windowBlock(std::size_t bytes) {
  auto *p = static_cast<char *>(defero_malloc(bytes));
  EXPECT_NE(p, nullptr);
  std::memset(p, 0, bytes);
  return p;
}

RbNode *at(char *block, std::size_t offset) { return reinterpret_cast<RbNode *>(block + offset); }

/// Links child under parent on one side.
void link(RbNode *parent, RbNode *child, bool right) {
  child->parent = parent;
  (right ? parent->right : parent->left) = child;
}

} // namespace

TEST(TreePath, ANodeRightAfterAContainerObjectInTheWindowIsNotItsHeader) {
  // A set object at the block's start (its header at +8), and a node 48
  // bytes on: within the header's reach of the object, as the slot after a
  // heap-allocated std::set<int> is. The root is elsewhere in the block.
  char *b = windowBlock(512);
  RbNode *header = at(b, 8), *near = at(b, 48), *root = at(b, 128), *leaf = at(b, 192);
  header->parent = root;
  root->parent = header;
  link(root, near, false); // root -> near: a left step
  link(near, leaf, true);  // near -> leaf: a right step
  std::uint64_t bits = 0;
  unsigned depth = 0;
  ASSERT_TRUE(defero::treePath(leaf, b, bits, depth));
  EXPECT_EQ(depth, 2u) << "the walk stopped at the node beside the container object";
  EXPECT_EQ(bits, 0b10u); // the root's step lowest
  ASSERT_TRUE(defero::treePath(root, b, bits, depth));
  EXPECT_EQ(depth, 0u);
  EXPECT_EQ(bits, 0u);
  defero_free(b);
}

TEST(TreePath, AContainerOutOfTheWindowEndsTheWalkAtItsHeader) {
  static RbNode header_of_a_global[2]; // (a container object not in the window)
  RbNode *header = &header_of_a_global[0];
  char *b = windowBlock(1024);
  // A path right, left, right, right from the root.
  const bool steps[] = {true, false, true, true};
  RbNode *x = at(b, 0);
  header->parent = x;
  x->parent = header;
  for (unsigned i = 0; i < 4; ++i) {
    RbNode *c = at(b, 64 * (i + 1));
    link(x, c, steps[i]);
    x = c;
  }
  std::uint64_t bits = 0;
  unsigned depth = 0;
  ASSERT_TRUE(defero::treePath(x, header_of_a_global, bits, depth));
  EXPECT_EQ(depth, 4u);
  EXPECT_EQ(bits, 0b1101u);
  defero_free(b);
}

TEST(TreePath, NonsenseIsRefusedWithoutAReadOutOfBounds) {
  static int container;
  char *b = windowBlock(3072); // (a small class's block: blocks above 4 KiB may lie elsewhere)
  std::uint64_t bits = 0;
  unsigned depth = 0;
  // A node outside the window, and one not 16-byte aligned.
  RbNode outside{0, nullptr, nullptr, nullptr};
  EXPECT_FALSE(defero::treePath(&outside, &container, bits, depth));
  EXPECT_FALSE(defero::treePath(b + 8, &container, bits, depth));
  // A parent link out of the window that is not the header.
  RbNode *a = at(b, 0);
  a->parent = &outside;
  EXPECT_FALSE(defero::treePath(a, &container, bits, depth));
  // Two nodes naming each other as parent (neither is in the container).
  RbNode *c = at(b, 64), *d = at(b, 128);
  c->parent = d;
  d->parent = c;
  d->left = c;
  EXPECT_FALSE(defero::treePath(c, &container, bits, depth));
  // A chain deeper than kRbMaxDepth under a header: refused; one level
  // less deep: its path.
  static RbNode header;
  std::vector<RbNode *> chain;
  for (unsigned i = 0; i <= defero::kRbMaxDepth + 1; ++i)
    chain.push_back(at(b, 32 * (i + 8)));
  header.parent = chain[0];
  chain[0]->parent = &header;
  for (std::size_t i = 1; i < chain.size(); ++i)
    link(chain[i - 1], chain[i], true);
  EXPECT_FALSE(defero::treePath(chain.back(), &header, bits, depth));
  ASSERT_TRUE(defero::treePath(chain[chain.size() - 2], &header, bits, depth));
  EXPECT_EQ(depth, defero::kRbMaxDepth);
  defero_free(b);
}
