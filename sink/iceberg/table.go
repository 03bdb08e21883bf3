package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// prepareTable loads the table, creates it (and its namespace) with
// create_table, and adds the configured columns the table lacks.
func (s *Sink) prepareTable(ctx context.Context) (*table.Table, error) {
	tbl, err := s.load(ctx)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		if !s.cfg.CreateTable {
			return nil, permanent(s.wrap("loading table "+s.tableName(), fmt.Errorf("%w: create it, or set create_table: true", err)))
		}
		tbl, err = s.createTable(ctx)
	}
	if err != nil {
		if retryable(err) {
			return nil, err
		}
		return nil, permanent(s.wrap("loading table "+s.tableName(), err))
	}
	if tbl, err = s.evolve(ctx, tbl); err != nil {
		if retryable(err) {
			return nil, err
		}
		return nil, permanent(s.wrap("adding columns to table "+s.tableName(), err))
	}
	return tbl, nil
}

// schemaFromConfig builds the schema of a table made by create_table.
func (c *Config) schemaFromConfig() (*iceberg.Schema, error) {
	ids := 0
	fields := make([]iceberg.NestedField, 0, len(c.Columns))
	for _, col := range c.Columns {
		ids++
		id := ids
		t, err := parseType(col.typeOf(), &ids)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col.Name, err)
		}
		fields = append(fields, iceberg.NestedField{ID: id, Name: col.Name, Type: t, Required: col.Required, Doc: col.Doc})
	}
	return iceberg.NewSchema(0, fields...), nil
}

// specFromConfig builds the partition spec of a table made by create_table.
func (c *Config) specFromConfig(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	if len(c.Partition) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	var fields []iceberg.PartitionField
	for i, p := range c.Partition {
		src, ok := sc.FindFieldByName(p.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition[%d].column: %q is not a column", i, p.Column)
		}
		tr, err := iceberg.ParseTransform(p.Transform)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition[%d].transform: %w", i, err)
		}
		if !tr.CanTransform(src.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition[%d]: transform %s does not apply to column %s of type %s", i, p.Transform, p.Column, src.Type)
		}
		name := p.Name
		if name == "" {
			name = strings.ReplaceAll(p.Column, ".", "_")
			if p.Transform != "identity" {
				t, _, _ := strings.Cut(p.Transform, "[")
				name += "_" + t
			}
		}
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{src.ID}, FieldID: 1000 + i, Name: name, Transform: tr})
	}
	return iceberg.NewPartitionSpec(fields...), nil
}

func (s *Sink) createTable(ctx context.Context) (*table.Table, error) {
	sc, err := s.cfg.schemaFromConfig()
	if err != nil {
		return nil, permanent(err)
	}
	spec, err := s.cfg.specFromConfig(sc)
	if err != nil {
		return nil, permanent(err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	ns := s.cfg.namespace()
	if err := s.cat.CreateNamespace(cctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		// A catalog without namespaces to create, or one created by
		// another writer meanwhile: the table's creation says.
		if exists, cerr := s.cat.CheckNamespaceExists(cctx, ns); cerr != nil || !exists {
			return nil, fmt.Errorf("creating namespace %s: %w", s.cfg.Namespace, err)
		}
	}
	props := iceberg.Properties{}
	for k, v := range s.cfg.Properties {
		props[k] = v
	}
	opts := []catalog.CreateTableOpt{catalog.WithPartitionSpec(&spec), catalog.WithProperties(props)}
	if s.cfg.Location != "" {
		opts = append(opts, catalog.WithLocation(warehouseURI(s.cfg.Location)))
	}
	tbl, err := s.cat.CreateTable(cctx, s.ident, sc, opts...)
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		// Another writer made it first.
		return s.load(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("creating table: %w", err)
	}
	s.log.Info("iceberg: created the table", "table", s.tableName(), "location", tbl.Location())
	return tbl, nil
}

// evolve adds to the table the configured columns it lacks (optional ones,
// unless required; Iceberg lets a required column be added only with a
// default, so a required new column is refused).
func (s *Sink) evolve(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	for attempt := 0; ; attempt++ {
		var missing []Column
		for _, c := range s.cfg.Columns {
			if _, ok := tbl.Schema().FindFieldByName(c.Name); !ok {
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 {
			return tbl, nil
		}
		tx := tbl.NewTransaction()
		up := tx.UpdateSchema(true, false)
		var names []string
		for _, c := range missing {
			if c.typeOf() == "" {
				return nil, permanent(fmt.Errorf("column %s is not in the table and has no type: give its type to add it", c.Name))
			}
			if c.Required {
				return nil, permanent(fmt.Errorf("column %s is not in the table and is required: a column added to a table with rows must be optional", c.Name))
			}
			ids := 0
			t, err := parseType(c.typeOf(), &ids)
			if err != nil {
				return nil, permanent(err)
			}
			up.AddColumn([]string{c.Name}, t, c.Doc, false, nil)
			names = append(names, c.Name)
		}
		if err := up.Commit(); err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		next, err := tx.Commit(cctx)
		cancel()
		if err == nil {
			s.log.Info("iceberg: added columns to the table", "table", s.tableName(), "columns", names)
			return next, nil
		}
		if !conflict(err) || attempt >= s.cfg.CommitRetries {
			return nil, err
		}
		if tbl, err = s.load(ctx); err != nil {
			return nil, err
		}
	}
}

// conflict reports whether a commit failed cleanly because the table moved
// (another writer committed first): nothing of it was applied.
func conflict(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "requirement failed")
}
