# Compresses the manual pages installed in DIR (gzip -9n, as Debian's
# policy 12.1 asks and man reads them): cmake -DDIR=dir -P gzip.cmake
file(GLOB pages "${DIR}/*.[1-9]")
foreach(p ${pages})
  execute_process(COMMAND gzip -9nf ${p} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${p}: exit ${rc}")
  endif()
endforeach()
