// Package monitor samples the resource usage of a node and of process trees
// on it, and records the samples as CSV, for the resource monitor of parallel
// steps (Azure ML's logs/sys/perf/<node>/). It does I/O only and knows
// nothing of Temporal: the activity that runs it calls Sampler.Sample every
// resource_monitor_interval seconds and Recorder.Write with the result.
//
// # The CSV file
//
// A Recorder writes <logs>/sys/perf/<node>/node_resource_usage.csv
// (FileName). The first line is the header, written once: a Recorder opened
// again on the same folder, after a worker restart, appends to the file
// without a second header. Then one row per sample, with these columns
// (Columns), named as Sample's JSON fields:
//
//	time                      when the sample was taken: RFC 3339, UTC, milliseconds
//	                          (2026-03-01T11:00:01.250Z)
//	cpu_percent               CPU use of the node, 0-100 over all its cores
//	mem_used_bytes            memory in use on the node: total less available
//	mem_total_bytes           physical memory of the node
//	mem_percent               mem_used_bytes as a percentage of mem_total_bytes
//	disk_read_bytes_per_sec   bytes read per second, summed over the physical disks
//	disk_write_bytes_per_sec  bytes written per second, summed over the physical disks
//	net_sent_bytes_per_sec    bytes sent per second, summed over the interfaces but lo
//	net_recv_bytes_per_sec    bytes received per second, summed over the interfaces but lo
//	processes                 live processes in the measured trees
//	tree_cpu_percent          CPU use of the trees; 100 is one core, so it may exceed 100
//	tree_rss_bytes            resident memory of the trees, summed over their processes
//
// Percentages have two decimals, rates are whole bytes per second.
//
// Rates and CPU percentages are over the time since the previous sample of
// the same Sampler, so the first row of a Sampler has 0 in cpu_percent, the
// four rate columns and tree_cpu_percent. After a restart the first row of
// the new Sampler has them 0 again.
//
// # What is measured
//
// Node figures come from gopsutil. Physical disks are the block devices with
// a /sys/block/<name>/device link: partitions, loop, zram, device-mapper and
// md devices are left out, so no I/O is counted twice.
//
// The process trees are the roots a Sampler is given and all their
// descendants, found in one scan of /proc/<pid>/stat per sample. Zombies have
// exited and are not counted. A process's CPU between two samples is the
// change in its utime+stime ticks (or all of them, for a process that started
// after the previous sample); a process that exited between samples drops
// out, with the CPU of its last moments. Ticks are converted with the
// kernel's clock tick rate, AT_CLKTCK from the auxiliary vector (what
// sysconf(_SC_CLK_TCK) returns), 100 if it cannot be read. Resident memory
// is the sum of the processes' rss, so pages they share count once each.
//
// # Cost
//
// BenchmarkSample: one sample of the node and of a tree of 10 processes
// costs 1.4-1.6 ms of CPU on the project's 2-core VM, where the node ran
// about 80 processes: 0.14-0.16% of one core at a 1 s interval, against the
// 1% budget. Most of it is the /proc scan, about 11-15 µs per process on the
// node (BenchmarkScanProc); reading one /proc/<pid>/stat is mostly the
// kernel building the line. A node running about 700 processes
// would reach the 1%.
package monitor
