package canonical_test

import (
	"reflect"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// The progress protocol's counter is not part of Store: a store of records
// need not implement it, and the callers that count reports ask for a
// ProgressObserver.
func TestObserveProgressIsApartFromStore(t *testing.T) {
	if _, ok := reflect.TypeFor[canonical.Store]().MethodByName("ObserveProgress"); ok {
		t.Fatal("canonical.Store has ObserveProgress: it belongs to canonical.ProgressObserver")
	}
	if _, ok := reflect.TypeFor[canonical.ProgressObserver]().MethodByName("ObserveProgress"); !ok {
		t.Fatal("canonical.ProgressObserver lacks ObserveProgress")
	}
}
