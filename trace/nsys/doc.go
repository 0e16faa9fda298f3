// Package nsys reads NVIDIA Nsight Systems captures into trace.Profile values.
//
// Two inputs are supported. ReadSQLite reads the database written by
// `nsys export --type sqlite`: it checks the export schema version in
// META_DATA_EXPORT, takes kernels from CUPTI_ACTIVITY_KIND_KERNEL with names
// resolved through StringIds (demangledName, falling back to shortName),
// memcpy and memset activity from their CUPTI tables, CUDA graph node kernels
// (graphNodeId), GPU names from TARGET_INFO_GPU and, for a named window,
// NVTX_EVENTS ranges. The per-device, per-name aggregation and the busy-time
// union run as SQL so that exports with millions of kernels never travel row by
// row into Go. ReadStatsCSV reads `nsys stats --report cuda_gpu_kern_sum
// --format csv` output, which has no per-device or timeline information.
package nsys
