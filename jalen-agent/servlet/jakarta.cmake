# The jakarta.servlet filter from the javax.servlet one (one source in the
# tree): cmake -DIN=EnergyFilter.java -DOUT=.../jakarta/EnergyFilter.java -P jakarta.cmake
file(READ ${IN} src)
string(REPLACE "javax.servlet" "jakarta.servlet" src "${src}")
string(REPLACE "package org.powerapi.jalen.servlet;" "package org.powerapi.jalen.jakarta;" src "${src}")
file(WRITE ${OUT} "${src}")
