//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package repl

import "os"

const noFollow = 0

func ownRegular(fi os.FileInfo) bool { return fi.Mode().IsRegular() }
