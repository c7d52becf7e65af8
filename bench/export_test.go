package bench

// The cell formats of the comparison's tables, for the tests.
var (
	FormatRoundTrips = formatRoundTrips
	FormatMs         = formatMs
)
