package server_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/zktest"
)

// TestBigValuesInBatches: getData replies whose values go out from the node's own bytes
// (writev) arrive whole and in order among small replies in the same batches, with their
// Stat, through a client we did not write.
func TestBigValuesInBatches(t *testing.T) {
	srv := zktest.Start(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	val := func(i int) []byte {
		switch i % 3 {
		case 0:
			return bytes.Repeat([]byte{byte('a' + i%26)}, 1000<<10+i) // big
		case 1:
			return []byte(fmt.Sprint("small", i))
		}
		return bytes.Repeat([]byte{byte(i)}, 16<<10) // the threshold itself
	}
	const n = 24
	for i := 0; i < n; i++ {
		if _, err := c.Create(fmt.Sprintf("/v%d", i), val(i), 0, open); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*n)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				data, st, err := c.Get(fmt.Sprintf("/v%d", i))
				switch {
				case err != nil:
					errs <- err
				case !bytes.Equal(data, val(i)):
					errs <- fmt.Errorf("/v%d: %d bytes, want %d", i, len(data), len(val(i)))
				case st.DataLength != int32(len(val(i))) || st.Version != 0:
					errs <- fmt.Errorf("/v%d: stat %+v", i, st)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
