package clientbench

var ParseStatCPU = parseStatCPU
