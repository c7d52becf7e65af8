# Reads the output of BenchmarkProjectionSizes and prints, per projector and
# size, how many times faster toolcanon ran than encoding/json in that run,
# with the allocations of each. Sub-benchmarks are named
# BenchmarkProjectionSizes/<projector>/<toolcanon|encoding_json>/<size>.
# When the benchmark ran several times, each is measured several times and
# the fastest measurement of each counts: on a shared machine the slower
# ones measure the other load.
/^BenchmarkProjectionSizes\// {
	split($1, part, "/")
	size = part[4]; sub(/-[0-9]+$/, "", size)
	key = part[2] " " size
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op" && (!((key, part[3]) in ns) || $(i - 1) + 0 < ns[key, part[3]])) ns[key, part[3]] = $(i - 1) + 0
		if ($i == "allocs/op") allocs[key, part[3]] = $(i - 1)
	}
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
}
END {
	printf "%-9s %-6s %12s %12s %8s %14s\n", "projector", "size", "toolcanon", "encoding_json", "speedup", "allocs (t/e)"
	# ns/op: the fastest of the runs of each.
	for (k = 1; k <= n; k++) {
		key = order[k]
		t = ns[key, "toolcanon"]; e = ns[key, "encoding_json"]
		if (t == "" || e == "") continue
		split(key, f, " ")
		printf "%-9s %-6s %9.3f ms %10.3f ms %7.2fx %7s/%s\n", f[1], f[2], t / 1e6, e / 1e6, e / t, allocs[key, "toolcanon"], allocs[key, "encoding_json"]
	}
}
