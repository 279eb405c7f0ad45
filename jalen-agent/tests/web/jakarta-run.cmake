# FilterRun.java's jakarta.servlet twin (the filter's own is made by
# servlet/jakarta.cmake): cmake -DIN=FilterRun.java -DOUT=.../JakartaFilterRun.java -P jakarta-run.cmake
file(READ ${IN} src)
string(REPLACE "javax.servlet" "jakarta.servlet" src "${src}")
string(REPLACE "org.powerapi.jalen.servlet.EnergyFilter" "org.powerapi.jalen.jakarta.EnergyFilter" src "${src}")
string(REPLACE "FilterRun" "JakartaFilterRun" src "${src}")
file(WRITE ${OUT} "${src}")
