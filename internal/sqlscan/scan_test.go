package sqlscan_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/streamfusion/image-entrypoint/internal/sqlscan"
)

func TestScan(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		want      []sqlscan.Use
	}{
		{"a source and a sink", `
CREATE TABLE orders (
  id BIGINT,
  ts AS PROCTIME(),  -- a computed column: AS inside the column list
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders; not a statement end',
  'value.format' = 'avro-confluent'
);
CREATE TEMPORARY TABLE IF NOT EXISTS ` + "`cat`.`db`.`out`" + ` (id BIGINT) COMMENT 'x' PARTITIONED BY (id) WITH ('connector'='filesystem', 'format'='parquet');
INSERT INTO out SELECT id FROM orders;`, []sqlscan.Use{
			{Statement: "table", Name: "orders", Option: "connector", Value: "kafka", Line: 7},
			{Statement: "table", Name: "orders", Option: "value.format", Value: "avro-confluent", Line: 9},
			{Statement: "table", Name: "cat.db.out", Option: "connector", Value: "filesystem", Line: 11},
			{Statement: "table", Name: "cat.db.out", Option: "format", Value: "parquet", Line: 11},
		}},
		{"a catalog", "create catalog hive with ('type' = 'hive', 'hive-conf-dir' = '/etc/hive')", []sqlscan.Use{
			{Statement: "catalog", Name: "hive", Option: "type", Value: "hive", Line: 1}}},
		{"CTAS with options, and a CTE in its query", "CREATE OR REPLACE TABLE t WITH ('connector' = 'print') AS WITH x AS (SELECT 1) SELECT * FROM x", []sqlscan.Use{
			{Statement: "table", Name: "t", Option: "connector", Value: "print", Line: 1}}},
		{"CTAS without options", "CREATE TABLE t AS WITH x AS (SELECT 1) SELECT * FROM x WITH ('connector' = 'no')", nil},
		{"comments and escaped quotes", "/* CREATE TABLE a WITH ('connector'='no') */ CREATE TABLE b (s STRING) WITH ('x' = 'it''s', 'key.format' = 'json') -- WITH ('connector' = 'no')", []sqlscan.Use{
			{Statement: "table", Name: "b", Option: "key.format", Value: "json", Line: 1}}},
		{"keys and identifiers as Flink matches them: exactly", "CREATE TABLE t (a INT) WITH ('Connector' = 'kafka', 'format' = ' json')", []sqlscan.Use{
			{Statement: "table", Name: "t", Option: "format", Value: " json", Line: 1}}},
		{"a view, a function, a hint", "CREATE VIEW v AS SELECT * FROM t /*+ OPTIONS('connector'='no') */; CREATE FUNCTION f AS 'x'", nil},
		{"an unclosed string ends the scan", "CREATE TABLE a (x INT) WITH ('connector' = 'datagen'); CREATE TABLE b (x INT) WITH ('connector' = 'kaf", []sqlscan.Use{
			{Statement: "table", Name: "a", Option: "connector", Value: "datagen", Line: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, sqlscan.Scan([]byte(c.sql)).Uses)
		})
	}
}

// Hostile input: a megabyte of open parentheses, of quotes, of WITHs, of
// statements or of options in one is scanned in one pass, gives at most
// MaxUses uses, and text past MaxBytes is not read.
func TestScanHostile(t *testing.T) {
	for name, sql := range map[string]string{
		"parentheses": "CREATE TABLE t " + strings.Repeat("(", sqlscan.MaxBytes),
		"quotes":      "CREATE TABLE t WITH (" + strings.Repeat("'', ", sqlscan.MaxBytes/4),
		"withs":       strings.Repeat("CREATE TABLE t WITH ", sqlscan.MaxBytes/20),
		"statements":  strings.Repeat("CREATE TABLE t WITH ('connector'='x');", sqlscan.MaxBytes/38),
		"options":     "CREATE TABLE t WITH (" + strings.Repeat("'format'='x', ", sqlscan.MaxBytes/15) + "'a'='b')",
	} {
		got := sqlscan.Scan([]byte(sql))
		assert.LessOrEqual(t, len(got.Uses), sqlscan.MaxUses, name)
		if name == "statements" || name == "options" {
			assert.True(t, got.Truncated, name)
		}
	}
	past := strings.Repeat(" ", sqlscan.MaxBytes) + "CREATE TABLE t WITH ('connector' = 'x')"
	assert.Empty(t, sqlscan.Scan([]byte(past)).Uses, "past MaxBytes")
}

// Statements that put JARs on the class path are noted by line, and a
// templated value is counted, not judged.
func TestScanAddsCodeAndTemplates(t *testing.T) {
	got := sqlscan.Scan([]byte("ADD JAR '/opt/jars/kafka.jar';\nSET 'pipeline.jars' = 'file:///x.jar';\nSET 'table.exec.x' = '1';\n" +
		"CREATE TEMPORARY FUNCTION f AS 'a.F' USING JAR '/f.jar';\nCREATE TABLE t (a INT) WITH ('connector' = '${SOURCE}', 'format' = 'json');"))
	assert.Equal(t, []int{1, 2, 4}, got.AddsCode)
	many := sqlscan.Scan([]byte(strings.Repeat("ADD JAR '/x.jar';\n", 100)))
	assert.Len(t, many.AddsCode, sqlscan.MaxAddsCode)
	assert.Equal(t, []sqlscan.Use{{Statement: "table", Name: "t", Option: "format", Value: "json", Line: 5}}, got.Uses)
}

func FuzzScan(f *testing.F) {
	f.Add([]byte("CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'format' = 'json');"))
	f.Add([]byte("create catalog c with ('type'='hive'); /* x */ -- y\n'it''s'"))
	f.Fuzz(func(t *testing.T, sql []byte) {
		r := sqlscan.Scan(sql)
		if len(r.Uses) > sqlscan.MaxUses {
			t.Fatalf("%d uses", len(r.Uses))
		}
		for _, u := range r.Uses {
			if u.Statement != "table" && u.Statement != "catalog" || u.Line < 1 {
				t.Fatalf("%+v", u)
			}
		}
	})
}
