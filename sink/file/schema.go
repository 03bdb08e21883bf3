package file

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weir-etl/weir/internal/fileformat"
)

// The output's parquet schema, without a declared one (see
// fileformat.OutputSchema and docs/DESIGN.md): every chunk of the output
// is written with the columns settled so far, and a column keeps its type.
// It is kept in schemaFile under the path, beside the chunks it describes,
// so that a restart (or a new process) goes on with the types the chunks
// already there have, and it goes with them if the directory is moved or
// deleted. It is written, fsynced and renamed into place before a chunk
// written with a new column can become visible, so it is never behind the
// visible chunks; a crash may leave it ahead of them, with a column no
// visible chunk has yet, which the replayed records fit.

// schemaFile is the output schema's file under the path: hidden (a leading
// dot) and not a chunk's name, so readers of chunks pass it by.
const schemaFile = ".weir-schema.json"

// loadSchema reads the output's schema, if one was kept.
func (s *Sink) loadSchema() error {
	if s.out == nil {
		return nil
	}
	p := filepath.Join(s.cfg.Path, schemaFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sink/file: reading the output's parquet schema: %w", err)
	}
	if err := s.out.Load(b); err != nil {
		return fmt.Errorf("sink/file: %s is not a parquet schema weir kept (%v): restore it, or declare the sink's schema to match the chunks already in %s", p, err, s.cfg.Path)
	}
	return nil
}

// writeSettled writes the records of c under the output's schema, settling
// the columns first seen in this group; a schema that changed is kept
// before the chunk can become visible.
func (s *Sink) writeSettled(c *chunk) error {
	sch, changed := s.out.Settle()
	if changed || s.schemaUnsaved {
		// Kept until it is saved: a later seal tries again.
		s.schemaUnsaved = true
		if err := s.saveSchema(); err != nil {
			return err
		}
		s.schemaUnsaved = false
	}
	err := fileformat.WriteRows(c.bw, sch, c.pending, s.cfg.Compression)
	c.pending, c.inferred = nil, false
	return err
}

// saveSchema replaces the schema file durably: a temporary file, fsynced,
// renamed over it, and the directory fsynced.
func (s *Sink) saveSchema() error {
	p := filepath.Join(s.cfg.Path, schemaFile)
	tmp := filepath.Join(s.cfg.Path, schemaFile+"."+s.runID+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("sink/file: keeping the output's parquet schema: %w", err)
	}
	_, err = f.Write(s.out.Encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("sink/file: keeping the output's parquet schema: %w", err)
	}
	return syncDir(s.cfg.Path)
}
