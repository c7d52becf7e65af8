// Package redact replaces sensitive values in log messages with typed
// placeholders (<IP>, <SECRET>, <EMAIL>, …) before they reach an agent.
//
// It covers credentials and key=value secrets, bearer, JWT, API-key and
// vendor tokens, private keys, connection strings with passwords, host, node,
// pod and container identifiers, PIDs, IPv4/IPv6 and MAC addresses, e-mail
// addresses, SQL literals, stack-trace frames, user names and home paths,
// card numbers and cloud account ids.
//
// A message passes through a fixed sequence of passes; each starts with a
// cheap gate so that ordinary messages are scanned, not copied. Go's regexp
// has no look-around, so neighbouring bytes are checked in code, and
// candidate addresses are confirmed with net/netip. The few regular
// expressions are compiled once, at package initialisation.
package redact
