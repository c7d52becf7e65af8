package otelcanon

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
)

// GenAI attribute keys of the OpenTelemetry semantic conventions. They are
// declared here because they left otel-go's semconv packages after v1.41.0;
// the stable keys (error.type, db.*) come from semconv v1.43.0.
const (
	GenAIOperationNameKey  attribute.Key = "gen_ai.operation.name"
	GenAIToolNameKey       attribute.Key = "gen_ai.tool.name"
	GenAIToolCallIDKey     attribute.Key = "gen_ai.tool.call.id"
	GenAIToolCallResultKey attribute.Key = "gen_ai.tool.call.result" // opt-in only: see WithAgentResult
)

// toolcanon's own attribute keys. None of them ever holds a payload.
const (
	RunIDKey          attribute.Key = "toolcanon.run.id"          // the run's id (spans only, never metrics)
	ToolDefinitionKey attribute.Key = "toolcanon.tool.definition" // the bound registry definition, name@version
	StatusKey         attribute.Key = "toolcanon.status"          // READY or ERROR
	CodeKey           attribute.Key = "toolcanon.code"            // the stable code of an ERROR
	EvidenceKey       attribute.Key = "toolcanon.evidence"        // EVIDENCE_FOUND, NO_EVIDENCE or ERROR
	ExecutedKey       attribute.Key = "toolcanon.executed"        // this call ran the tool
	ReplayedKey       attribute.Key = "toolcanon.replayed"        // a stored outcome returned for a duplicate
	PhaseKey          attribute.Key = "toolcanon.phase"           // preflight, begin, tool, projection, complete
	SizeKey           attribute.Key = "toolcanon.size"            // bytes a phase produced
	InputSizeKey      attribute.Key = "toolcanon.input.size"      // bytes of the canonical input
	RequestSizeKey    attribute.Key = "toolcanon.request.size"    // bytes of the canonical request
	RawSizeKey        attribute.Key = "toolcanon.raw.size"        // bytes of the raw response
	ResultSizeKey     attribute.Key = "toolcanon.result.size"     // bytes of the projected result
	AgentSizeKey      attribute.Key = "toolcanon.agent.size"      // bytes returned to the agent
	StoreMethodKey    attribute.Key = "toolcanon.store.method"    // the canonical.Store method
)

// Metric names. No metric carries a run or call id.
const (
	// MetricExecuteToolDuration: seconds per Invoke, by gen_ai.tool.name and
	// error.type (the stable code), with the GenAI conventions' buckets.
	MetricExecuteToolDuration = "gen_ai.execute_tool.duration"
	// MetricOutcomes: Invokes by tool, status, replayed and code (ERROR) or
	// evidence (READY).
	MetricOutcomes = "toolcanon.call.outcomes"
	// MetricRefusals: calls the store refused at Begin for a budget or as a
	// duplicate, by tool and code.
	MetricRefusals = "toolcanon.call.refusals"
	// MetricPhaseDuration: seconds per phase, by phase, tool and error.type.
	MetricPhaseDuration = "toolcanon.call.phase.duration"
	// MetricStoreDuration: seconds per store operation, by db.system.name,
	// db.operation.name, db.stored_procedure.name (the script) and
	// error.type; the database conventions' metric.
	MetricStoreDuration = "db.client.operation.duration"
)

// Histogram buckets, in seconds: the GenAI conventions' for a call, the
// database conventions' for a store operation, and finer ones for phases,
// most of which take micro- to milliseconds.
var (
	genAIBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	dbBuckets    = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
	phaseBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}
)

func (o *Observer) instruments(m metric.Meter) error {
	var err error
	if o.duration, err = m.Float64Histogram(MetricExecuteToolDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of tool executions."),
		metric.WithExplicitBucketBoundaries(genAIBuckets...)); err != nil {
		return err
	}
	if o.outcomes, err = m.Int64Counter(MetricOutcomes, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls by outcome: status and stable code or evidence.")); err != nil {
		return err
	}
	if o.refusals, err = m.Int64Counter(MetricRefusals, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls refused by the store at Begin: budget exhausted, duplicate, in progress.")); err != nil {
		return err
	}
	if o.phases, err = m.Float64Histogram(MetricPhaseDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of each phase of a tool call."),
		metric.WithExplicitBucketBoundaries(phaseBuckets...)); err != nil {
		return err
	}
	d, err := dbconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(dbBuckets...))
	if err != nil {
		return err
	}
	o.storeDurs = d.Inst()
	return nil
}
