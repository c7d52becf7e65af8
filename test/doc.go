// Package test holds the integration tests that need more than one package
// or more than a healthy server: the differential test of the two stores,
// faults (script cache flushed, server killed and restarted, a cluster
// master killed and replaced by its replica), a
// least-privilege ACL user, the cluster's slot layout, the commands reads
// send (watched with MONITOR and INFO commandstats: no expiry is ever touched
// outside the creating script), and the import graph that keeps Redis inside
// the store. Every test that needs Redis runs against real redis-server
// processes started by internal/redistest.
package test
