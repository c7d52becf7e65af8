// Package test holds the integration tests that need more than one package
// or more than a healthy server: the differential test of the two stores,
// faults (script cache flushed, server killed and restarted, a cluster
// master killed and replaced by its replica), a
// least-privilege ACL user, and the cluster's slot layout. Every test here
// runs against real redis-server processes started by internal/redistest.
package test
