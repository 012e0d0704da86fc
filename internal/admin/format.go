package admin

import (
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// hex is Java's Long.toHexString: lowercase, no padding, two's complement for negatives.
func hex(v int64) string { return strconv.FormatUint(uint64(v), 16) }

// JavaDouble is Java's Double.toString of f ("0.0", "5.7195", "1.0E7", "NaN").
func JavaDouble(f float64) string { return javaDouble(f) }

// javaDouble is Java's Double.toString: plain decimal with at least one fractional digit for
// 1e-3 <= |f| < 1e7, otherwise "d.dddE[-]n". Digits are the shortest that round-trip; JDK 17
// is not always shortest (1e23 prints as 9.999999999999999E22, the smallest subnormal as
// 4.9E-324), a difference only values no ZooKeeper metric reaches would show.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // "1.2345e-05", "1e+07"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaAvg is AvgMinMaxCounter.getAvg: sum/count as a double, rounded HALF_UP to 4 decimals
// on that double's exact binary value (new BigDecimal(double).setScale(4, HALF_UP)), then
// back to the nearest double. 0 when count is 0.
func javaAvg(sum, count int64) float64 {
	if count <= 0 {
		return 0
	}
	avg := float64(sum) / float64(count)
	if math.IsInf(avg, 0) || math.IsNaN(avg) {
		return avg
	}
	r := new(big.Rat).SetFloat64(avg)
	neg := r.Sign() < 0
	r.Abs(r)
	r.Mul(r, big.NewRat(10000, 1))
	r.Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // floor, r is non-negative
	if neg {
		n.Neg(n)
	}
	out, _ := new(big.Rat).SetFrac(n, big.NewInt(10000)).Float64()
	return out
}

// Summary is one of ZooKeeper's AvgMinMaxCounter / AvgMinMaxPercentileCounter metrics: the
// count, sum, min and max of observed values (milliseconds, bytes, counts). The percentiles
// are printed only for the metrics ZooKeeper keeps percentiles for (see PercentileSummaryNames);
// ZooKeeper samples them from a reservoir, rounded to whole numbers.
type Summary struct {
	Count, Sum, Min, Max int64
	P50, P95, P99, P999  int64
}

// Add records one value. Not safe for concurrent use; percentiles are left alone.
func (s *Summary) Add(v int64) {
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if s.Count == 0 || v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
}

// Avg is the mean as ZooKeeper reports it: rounded half-up to 4 decimals, 0 when empty.
func (s Summary) Avg() float64 { return javaAvg(s.Sum, s.Count) }

// min and max read as 0 until a value is recorded, as in ZooKeeper.
func (s Summary) min() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Min
}

func (s Summary) max() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Max
}

// BufferStats is ZooKeeper's last/min/max size tracker (client response sizes, leader
// proposal sizes). ZooKeeper starts it at -1/-1/-1 and prints those until the first value;
// use NewBufferStats for that start.
type BufferStats struct{ Last, Min, Max int64 }

// NewBufferStats returns the -1/-1/-1 start state.
func NewBufferStats() BufferStats { return BufferStats{-1, -1, -1} }

// Add records one size.
func (b *BufferStats) Add(size int64) {
	b.Last = size
	if b.Min == -1 || size < b.Min {
		b.Min = size
	}
	if b.Max == -1 || size > b.Max {
		b.Max = size
	}
}

// String is BufferStats.toString: "last/min/max".
func (b BufferStats) String() string {
	return strconv.FormatInt(b.Last, 10) + "/" + strconv.FormatInt(b.Min, 10) + "/" + strconv.FormatInt(b.Max, 10)
}

// FormatRemote writes a client address the way Java 17 prints an accepted socket's
// InetSocketAddress, which is what cons, stat and dump show: "/127.0.0.1:57746",
// "/[0:0:0:0:0:0:0:1]:2181" (IPv6 uncompressed, bracketed), IPv4-mapped IPv6 as IPv4.
func FormatRemote(ap netip.AddrPort) string {
	a := ap.Addr().Unmap()
	port := strconv.Itoa(int(ap.Port()))
	if a.Is4() {
		return "/" + a.String() + ":" + port
	}
	b := a.As16()
	var s strings.Builder
	s.WriteString("/[")
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s.WriteByte(':')
		}
		s.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := a.Zone(); z != "" {
		s.WriteByte('%')
		s.WriteString(z)
	}
	s.WriteString("]:")
	s.WriteString(port)
	return s.String()
}

// javaDate is java.util.Date.toString ("EEE MMM dd HH:mm:ss zzz yyyy") in t's location.
// Java names a zone without an abbreviation "GMT+01:00" where Go writes "+01"; servers run
// in UTC or a named zone, so the difference is not worth a table.
func javaDate(t time.Time) string { return t.Format("Mon Jan 02 15:04:05 MST 2006") }
