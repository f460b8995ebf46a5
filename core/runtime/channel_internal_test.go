package runtime

import (
	"reflect"
	"testing"

	"streamd/core"
)

// A channel stage's fields, some written per batch by its goroutine, lie a
// cache line or more away from both ends of the object, so that no other
// object shares their lines (channelStage's padding).
func TestChannelStagePadded(t *testing.T) {
	typ := reflect.TypeFor[channelStage]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "_" {
			continue
		}
		if f.Offset < core.CacheLine || typ.Size()-(f.Offset+f.Type.Size()) < core.CacheLine {
			t.Errorf("channelStage.%s at bytes %d–%d of %d: within a cache line of an end", f.Name, f.Offset, f.Offset+f.Type.Size(), typ.Size())
		}
	}
}
