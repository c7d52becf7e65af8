// Package redact replaces sensitive values in log messages with typed
// placeholders (<IP>, <SECRET>, <EMAIL>, …) before they reach an agent.
//
// It covers credentials and key=value secrets, bearer, JWT, API-key and
// vendor tokens, private keys, connection strings and URLs with passwords
// in any scheme, webhook URLs (the secret part of their path), command-line
// flags and arguments that carry passwords or accounts (-p, -u user:pass,
// --password, htpasswd -b), host, node (EC2, GKE, AKS), pod and container
// identifiers, machines named with a port (db01:5432) or an account
// (root@db01), process and thread ids, IPv4/IPv6 and MAC addresses (not
// the unspecified and loopback ones), e-mail addresses, SQL literals,
// stack-trace frames, user names and home paths, card numbers and cloud
// account ids.
//
// A rule that names an account by the word after "user" needs a name-like
// word: "User cancelled the checkout" is a sentence, not an account.
//
// Every pass costs time linear in the message, whatever it holds; the
// package's adversarial tests check it for every literal of Vocabulary.
//
// A message passes through a fixed sequence of passes. One scan first
// finds which trigger bytes it holds (digits, '=', ':', '@', …) and which
// of the rarer bigrams of the phrases, keywords and markers the passes
// look for ("us", "sw", ":/", …); a pass whose triggers are absent is
// skipped at the cost of a bit test, and the others start with a cheap
// gate, so that ordinary messages are scanned, not copied. The scan is
// made again after a rewrite only when a pass still to run needs it. Go's
// regexp has no look-around, so neighbouring bytes are checked in code;
// dotted quads are parsed by hand exactly as net/netip parses them, and
// other candidate addresses are confirmed with net/netip. The few regular
// expressions are compiled once, at package initialisation.
package redact
