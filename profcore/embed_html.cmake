# Turns flamegraph.html.in into a C file with two strings: the page up
# to the @DATA@ line (pc_flamegraph_head) and after it (pc_flamegraph_tail).
# Usage: cmake -DIN=flamegraph.html.in -DOUT=flamegraph_html.c -P embed_html.cmake
file(READ "${IN}" content)
string(FIND "${content}" "@DATA@\n" pos)
if(pos LESS 0)
  message(FATAL_ERROR "${IN}: no @DATA@ line")
endif()
string(SUBSTRING "${content}" 0 ${pos} head)
math(EXPR tailpos "${pos} + 7")
string(SUBSTRING "${content}" ${tailpos} -1 tail)
foreach(part head tail)
  string(REPLACE "\\" "\\\\" s "${${part}}")
  string(REPLACE "\"" "\\\"" s "${s}")
  string(REPLACE "\n" "\\n\"\n    \"" s "${s}")
  set(${part}_c "    \"${s}\"")
endforeach()
file(WRITE "${OUT}.tmp"
"/* Generated from flamegraph.html.in by embed_html.cmake: do not edit. */
extern const char pc_flamegraph_head[];
extern const char pc_flamegraph_tail[];
const char pc_flamegraph_head[] =
${head_c};
const char pc_flamegraph_tail[] =
${tail_c};
")
file(RENAME "${OUT}.tmp" "${OUT}")
