package ring_test

import "runtime"

func runtimeGosched() { runtime.Gosched() }
