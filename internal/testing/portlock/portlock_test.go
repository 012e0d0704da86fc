package portlock

import "testing"

// TestReserve: a reserved port is below the ephemeral range and locked until released.
func TestReserve(t *testing.T) {
	port, lock, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	if port < 10000 || port >= EphemeralStart() {
		t.Errorf("port %d is not below the ephemeral range (%d)", port, EphemeralStart())
	}
	if _, ok := Lock(port); ok {
		t.Errorf("port %d could be locked twice", port)
	}
	lock.Close()
	again, ok := Lock(port)
	if !ok {
		t.Fatalf("port %d still locked after Close", port)
	}
	again.Close()
}
