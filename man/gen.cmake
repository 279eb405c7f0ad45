# Writes powerapi.1 and powerapi-COMMAND.1 for every command into OUT from
# the program itself (`powerapi --man`, `powerapi --complete`, `powerapi
# COMMAND --man`): the pages come from the tables --help prints.
# cmake -DPOWERAPI=path/to/powerapi -DOUT=dir -P gen.cmake
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${POWERAPI} --man OUTPUT_FILE ${OUT}/powerapi.1
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${POWERAPI} --man: exit ${rc}")
endif()
execute_process(COMMAND ${POWERAPI} --complete OUTPUT_VARIABLE cmds
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${POWERAPI} --complete: exit ${rc}")
endif()
string(REPLACE "\n" ";" cmds "${cmds}")
foreach(c ${cmds})
  if(c STREQUAL "")
    continue()
  endif()
  execute_process(COMMAND ${POWERAPI} ${c} --man
                  OUTPUT_FILE ${OUT}/powerapi-${c}.1.tmp RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${POWERAPI} ${c} --man: exit ${rc}")
  endif()
  # rewritten only when it changed, so that install sees the same file
  file(COPY_FILE ${OUT}/powerapi-${c}.1.tmp ${OUT}/powerapi-${c}.1 ONLY_IF_DIFFERENT)
  file(REMOVE ${OUT}/powerapi-${c}.1.tmp)
endforeach()
