# Writes one wrapper (build/bin/defero-c++ or defero-cc) from defero-cc.in.
# Runs at build time, after the plugin and the runtime are linked:
#   cmake -DTEMPLATE=... -DOUT=... -DNAME=... -DLANG=... -DCOMPILER=...
#         -DPLUGIN=... -DCLANG_PLUGIN=... -DRUNTIME=... -DSTLPATCH=...
#         -P make_wrapper.cmake
# The wrapper carries the identity of what it loads (the first 16 hex digits
# of the SHA-256 of DeferoPlugin.so, DeferoClangPlugin.so and libdefero.so,
# and of the clang's --version), so it changes, and only changes, when one
# of them does: a compiler cache
# that checks the compiler (ccache's compiler_check: mtime, content or
# --version) then stops reusing objects the old plugin compiled.
foreach(var TEMPLATE OUT NAME LANG COMPILER PLUGIN CLANG_PLUGIN RUNTIME STLPATCH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make_wrapper.cmake: -D${var}=... is required")
  endif()
endforeach()

set(identity "")
foreach(part "plugin|${PLUGIN}" "clang-plugin|${CLANG_PLUGIN}" "runtime|${RUNTIME}")
  string(REPLACE "|" ";" part "${part}")
  list(GET part 0 label)
  list(GET part 1 file)
  file(SHA256 "${file}" sum)
  string(SUBSTRING "${sum}" 0 16 sum)
  string(APPEND identity "${label} ${sum}, ")
endforeach()
# And the clang it runs, by its --version (Debian's revision included), so
# an upgraded clang is a new compiler too (the build reruns this when the
# clang binary changes: plugin/CMakeLists.txt).
execute_process(COMMAND "${COMPILER}" --version OUTPUT_VARIABLE clang_version
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_wrapper.cmake: ${COMPILER} --version failed")
endif()
string(SHA256 sum "${clang_version}")
string(SUBSTRING "${sum}" 0 16 sum)
string(APPEND identity "clang ${sum}")

get_filename_component(LIBDIR "${RUNTIME}" DIRECTORY)
file(READ "${TEMPLATE}" text)
foreach(var NAME LANG COMPILER PLUGIN CLANG_PLUGIN LIBDIR STLPATCH)
  string(REPLACE "@${var}@" "${${var}}" text "${text}")
endforeach()
string(REPLACE "@IDENTITY@" "${identity}" text "${text}")

# Rewrite only on a change, so an unchanged plugin keeps the wrapper's mtime.
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  get_filename_component(dir "${OUT}" DIRECTORY)
  get_filename_component(name "${OUT}" NAME)
  file(WRITE "${dir}/.${name}.tmp" "${text}")
  file(CHMOD "${dir}/.${name}.tmp" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
    GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(RENAME "${dir}/.${name}.tmp" "${OUT}")
endif()
