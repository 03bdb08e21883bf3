package iceberg

import (
	"context"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// iceberg-go's local file system writes without fsync: a data file, a
// manifest or a metadata file could still be in the page cache when the
// catalog's pointer to it is committed, and a machine crash would leave the
// table pointing at files that are gone or short. The sink replaces it, for
// the file scheme and plain paths, with one that makes every file durable
// before Close or WriteFile returns: the file is fsynced, and so is its
// directory (a new name is durable only once its directory is). The
// replacement is process-wide, for every iceberg-go table the process
// opens; only this package uses iceberg-go in weir.
func init() {
	factory := func(context.Context, *url.URL, map[string]string) (iceio.IO, error) {
		return durableFS{}, nil
	}
	for _, scheme := range []string{"file", ""} {
		iceio.Unregister(scheme)
		iceio.Register(scheme, factory)
	}
}

// durableFS is a local file system with durable writes. It also reads a
// file:// location as the literal path after the scheme, as Java's Iceberg,
// pyiceberg and DuckDB do: a partition value that needs escaping
// (s_truncate=h%C3%A9) is a directory of that very name, which every reader
// finds (iceberg-go's LocalFS would decode it to "hé", where the others do
// not look).
type durableFS struct{}

// localName turns a file:// location into its path, without decoding.
func localName(name string) string {
	if rest, ok := strings.CutPrefix(name, "file://"); ok {
		if rest, ok := strings.CutPrefix(rest, "localhost/"); ok {
			return "/" + rest
		}
		return rest
	}
	if rest, ok := strings.CutPrefix(name, "file:"); ok {
		return rest
	}
	return name
}

// Open opens a file to read.
func (durableFS) Open(name string) (iceio.File, error) { return os.Open(localName(name)) }

// ReadFile reads a whole file.
func (durableFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(localName(name)) }

// Remove deletes a file.
func (durableFS) Remove(name string) error { return os.Remove(localName(name)) }

// Stat describes a file.
func (durableFS) Stat(name string) (iofs.FileInfo, error) { return os.Stat(localName(name)) }

// WalkDir walks the tree at root, passing paths as the OS names them.
func (durableFS) WalkDir(root string, fn iofs.WalkDirFunc) error {
	return filepath.WalkDir(localName(root), fn)
}

// Create returns a file whose Close fsyncs it and its directory.
func (fs durableFS) Create(name string) (iceio.FileWriter, error) {
	path := localName(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &syncedFile{File: f}, nil
}

// WriteFile writes content to name durably: to a temporary name first,
// fsynced, then renamed, so that a crash leaves the whole file or none.
func (fs durableFS) WriteFile(name string, content []byte) error {
	path := localName(name)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".weir-tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(content); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

type syncedFile struct{ *os.File }

// Close fsyncs the file and its directory, then closes it.
func (f *syncedFile) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	if err := f.File.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(f.File.Name()))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var (
	_ iceio.WriteFileIO = durableFS{}
	_ iceio.ReadFileIO  = durableFS{}
	_ iceio.ListableIO  = durableFS{}
)
