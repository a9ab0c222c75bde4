module github.com/streamfusion/image-entrypoint

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/rs/zerolog v1.35.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.29.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
