module github.com/streamfusion/image-entrypoint

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/hashicorp/go-version v1.9.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
