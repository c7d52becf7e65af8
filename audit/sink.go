package audit

import "context"

// Sink keeps exported events for as long as the operator must (a file, a
// database, an object store, a SIEM). The exporter hands it batches in
// order; it acknowledges a batch to the store only once Write returned
// nil, so a Sink must have made the batch durable by then.
//
// Delivery is at least once: a batch whose acknowledgement did not reach
// the store (the exporter died, the store was unreachable) is delivered
// again, with the same events, the same hashes and an equivalent
// checkpoint. A Sink stores each event once: an event whose (run,
// generation, sequence number) it holds already is skipped, which is what
// makes the export exactly once at the sink.
type Sink interface {
	// Write makes events durable, then cp, the signed checkpoint over the
	// heads they reach. Events of one stream come in sequence order.
	Write(ctx context.Context, events []Event, cp Checkpoint) error
	// LastCheckpoint returns the last checkpoint the sink holds (ok false
	// when none), so that an exporter that starts chains its checkpoints
	// to it.
	LastCheckpoint(ctx context.Context) (cp Checkpoint, ok bool, err error)
}
