// config_test - DEFERO_TRACE's file pattern (%p the process id, %% a
// percent sign), as readConfig and a forked child expand it.
#include <gtest/gtest.h>

#include <string>

#include "config.h"

namespace {

std::string expand(const char *pattern, long pid, unsigned long cap = 4096) {
  char out[4096];
  if (!defero::traceFilePath(pattern, pid, out, cap))
    return "<rejected>";
  return out;
}

TEST(TraceFilePath, PidAndPercentSign) {
  EXPECT_EQ(expand("/tmp/run.%p.trace", 4242), "/tmp/run.4242.trace");
  EXPECT_EQ(expand("%p-%p", 7), "7-7");
  EXPECT_EQ(expand("/tmp/100%%.trace", 1), "/tmp/100%.trace");
  EXPECT_EQ(expand("/tmp/a%%p", 9), "/tmp/a%p"); // %% then a literal p
  EXPECT_EQ(expand("/tmp/a%%%p", 9), "/tmp/a%9");
  EXPECT_EQ(expand("plain.trace", 9), "plain.trace");
  EXPECT_EQ(expand("", 9), "");
}

TEST(TraceFilePath, RejectsOtherSequences) {
  EXPECT_EQ(expand("/tmp/%q.trace", 1), "<rejected>");
  EXPECT_EQ(expand("/tmp/trace%", 1), "<rejected>");
  EXPECT_EQ(expand("%", 1), "<rejected>");
  EXPECT_EQ(expand("%P", 1), "<rejected>");
  EXPECT_EQ(expand("%d", 1), "<rejected>");
}

TEST(TraceFilePath, RejectsWhatDoesNotFit) {
  EXPECT_EQ(expand("abc", 1, 4), "abc");
  EXPECT_EQ(expand("abc", 1, 3), "<rejected>");
  EXPECT_EQ(expand("a%p", 12345, 7), "a12345");
  EXPECT_EQ(expand("a%p", 12345, 6), "<rejected>");
  EXPECT_EQ(expand("", 1, 1), "");
  EXPECT_EQ(expand("", 1, 0), "<rejected>");
}

} // namespace
