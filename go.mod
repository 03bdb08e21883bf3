module github.com/weir-etl/weir

go 1.26

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
