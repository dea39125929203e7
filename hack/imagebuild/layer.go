package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Tree is the content of one layer: directories, files and symlinks by
// their path in the image. Its tarball is the same bytes for the same
// content (sorted entries, one fixed time, no host owners), so an image
// built again from the same inputs has the same digest and a cluster that
// already runs it rolls nothing.
type Tree struct {
	entries map[string]entry
}

type entry struct {
	typ      byte // tar.TypeDir, TypeReg, TypeSymlink
	mode     int64
	uid, gid int
	data     []byte // TypeReg
	src      string // TypeReg read from the host at write time
	link     string // TypeSymlink
}

// NewTree is an empty layer.
func NewTree() *Tree { return &Tree{entries: map[string]entry{}} }

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

// Dir adds a directory (and its parents, 0755 root).
func (t *Tree) Dir(p string, mode int64, uid, gid int) {
	p = clean(p)
	t.parents(p)
	t.entries[p] = entry{typ: tar.TypeDir, mode: mode, uid: uid, gid: gid}
}

func (t *Tree) parents(p string) {
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := t.entries[d]; !ok {
			t.entries[d] = entry{typ: tar.TypeDir, mode: 0o755}
		}
	}
}

// File adds a file with the given bytes, owned by root.
func (t *Tree) File(p string, mode int64, data []byte) {
	p = clean(p)
	t.parents(p)
	t.entries[p] = entry{typ: tar.TypeReg, mode: mode, data: data}
}

// HostFile adds the host's file src at p, owned by root, with its mode.
func (t *Tree) HostFile(p, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	p = clean(p)
	t.parents(p)
	t.entries[p] = entry{typ: tar.TypeReg, mode: int64(fi.Mode().Perm()), src: src}
	return nil
}

// Symlink adds a symbolic link.
func (t *Tree) Symlink(p, target string) {
	p = clean(p)
	t.parents(p)
	t.entries[p] = entry{typ: tar.TypeSymlink, mode: 0o777, link: target}
}

// Has reports whether p is in the tree.
func (t *Tree) Has(p string) bool {
	_, ok := t.entries[clean(p)]
	return ok
}

// Tar writes the tree as a tarball.
func (t *Tree) Tar(w io.Writer) error {
	names := make([]string, 0, len(t.entries))
	for n := range t.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		e := t.entries[n]
		h := &tar.Header{
			Typeflag: e.typ, Name: n, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: epoch,
		}
		var data []byte
		switch e.typ {
		case tar.TypeDir:
			h.Name += "/"
		case tar.TypeSymlink:
			h.Linkname = e.link
		case tar.TypeReg:
			data = e.data
			if e.src != "" {
				b, err := os.ReadFile(e.src)
				if err != nil {
					return err
				}
				data = b
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if len(data) > 0 {
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// Layer is the tree as an image layer (gzip).
func (t *Tree) Layer() (v1.Layer, error) {
	var buf bytes.Buffer
	if err := t.Tar(&buf); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}
