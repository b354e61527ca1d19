// Package infile opens the files the readers take in: the file and its
// FileInfo in one step, and, where a size limit checked before reading
// bounds what is read, a refusal of anything but a regular file.
package infile

import (
	"errors"
	"io/fs"
	"os"
)

// ErrNotRegular is the error of OpenRegular on a path that is not a
// regular file (a directory, a pipe, a device). Its text is "not a
// regular file".
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading and returns the file and its FileInfo. Its
// errors are os.Open's and Stat's as they are; on a Stat error the file is
// closed. The caller closes f.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// OpenRegular is Open refusing, with ErrNotRegular and the file closed,
// anything but a regular file: the size in its FileInfo is then what can
// be read (a pipe's or a device's says nothing of it), so that a limit
// checked on it holds before a byte is read.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, ErrNotRegular
	}
	return f, st, nil
}
