package replicacache

// LookUpIn is Lookup in the index section index, for the fuzz target.
func LookUpIn(index []byte, key string) ([]byte, error) {
	at := func(p []byte, off int64) (int, error) {
		if off < 0 || off+int64(len(p)) > int64(len(index)) {
			return 0, errDamaged
		}
		return copy(p, index[off:]), nil
	}
	x, err := readIndex(at, int64(len(index)))
	if err != nil {
		return nil, err
	}
	p, found, err := x.find(key)
	if err != nil {
		return nil, err
	}
	return x.partial(key, p, found), nil
}
