package bench

// SetMemorySamples makes the memory figure take n weighings until the
// returned function restores the number.
func SetMemorySamples(n int) (restore func()) {
	was := memorySamples
	memorySamples = n
	return func() { memorySamples = was }
}
