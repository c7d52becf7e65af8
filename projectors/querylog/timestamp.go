package querylog

import "time"

// parseTimestamp returns the UnixNano of time.Parse(time.RFC3339Nano, s).
// The common shape of log timestamps, YYYY-MM-DDTHH:MM:SS with an optional
// fraction of at most nine digits and Z, is read directly; anything else,
// valid or not, goes to time.Parse, so that both accept the same and give
// the same instant.
func parseTimestamp(s string) (int64, error) {
	const n = len("2006-01-02T15:04:05Z")
	if len(s) < n || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return parseSlow(s)
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	nsec := 0
	frac := s[19 : len(s)-1]
	ok7 := true
	if len(frac) > 0 {
		// A dot and one to nine digits.
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return parseSlow(s)
		}
		nsec, ok7 = digits(frac[1:])
		for k := len(frac) - 1; k < 9; k++ {
			nsec *= 10
		}
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 59 {
		return parseSlow(s) // for its error
	}
	// As time.Time.UnixNano computes it, wrapping where it wraps.
	unix := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return unix*1e9 + int64(nsec), nil
}

func parseSlow(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

// daysFromCivil returns the number of days from 1970-01-01 to the given
// date of the proleptic Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// digits returns the value of s when it is made of ASCII digits only.
func digits(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}
