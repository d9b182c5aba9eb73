package replicacache

// LookUpIn is Lookup in the index section index, for the fuzz target.
func LookUpIn(index []byte, key string) ([]byte, error) {
	at := func(p []byte, off int64) (int, error) {
		if off < 0 || off+int64(len(p)) > int64(len(index)) {
			return 0, errDamaged
		}
		return copy(p, index[off:]), nil
	}
	return lookUp(at, int64(len(index)), key)
}
