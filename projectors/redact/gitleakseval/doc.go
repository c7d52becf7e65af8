// Package gitleakseval measures gitleaks' default rule set as an extra
// detector of package redact: Detector runs each rule whose keywords the
// message holds (RE2, so linear in the message), with the rule's entropy
// threshold and allowlists, and reports the secret of each match. It is a
// module of its own so that the core module does not require gitleaks;
// its tests print the redaction figures of the corpora with the extra
// detector, and its benchmark the query-log projection speed with and
// without it.
//
// What it leaves out of gitleaks: rules without keywords (they would run
// on every message), the decoding passes, path and commit allowlists and
// composite rules.
package gitleakseval
