package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// slf4jProviderService is the service SLF4J 2 finds its binding by.
const slf4jProviderService = "org.slf4j.spi.SLF4JServiceProvider"

// loggingBindingLost reports an SLF4J 2 API winning on lib's class path
// (the first JAR holding org/slf4j/LoggerFactory, flink-dist last) with no
// SLF4J 2 provider beside it: SLF4J 2 looks for providers by ServiceLoader
// only and ignores Flink's 1.x binding (log4j-slf4j-impl's
// StaticLoggerBinder), so every logger of every Flink process is the
// no-operation logger. usrlib cannot do this: org.slf4j is parent-first.
func loggingBindingLost(v *view) []Finding {
	var winner *payload.JAR
	for _, j := range v.Classpath {
		if j.Err == nil && j.SLF4JFactory {
			winner = j
			break
		}
	}
	if winner == nil || !winner.SLF4JProviders {
		return nil
	}
	for _, j := range v.Classpath {
		if j.Err == nil && slices.Contains(j.Services, slf4jProviderService) {
			return nil
		}
	}
	log4j := ""
	for _, j := range v.Classpath {
		if base := j.Path[strings.LastIndexByte(j.Path, '/')+1:]; strings.HasPrefix(base, "log4j-api-") && strings.HasSuffix(base, ".jar") {
			log4j = strings.TrimSuffix(strings.TrimPrefix(base, "log4j-api-"), ".jar")
		}
	}
	fix := fmt.Sprintf("remove %s from lib, or rebuild it without org/slf4j (relocate or exclude slf4j-api); or, to keep SLF4J 2, add its provider for Log4j, org.apache.logging.log4j:log4j-slf4j2-impl:%s, to lib", winner.Path, cmp.Or(log4j, "<lib's log4j version>"))
	return one(Finding{Path: winner.Path,
		Message:  "the SLF4J 2 API wins on the class path with no SLF4J 2 provider: every log line of this process goes to SLF4J's no-operation logger",
		Found:    fmt.Sprintf("%s holds org/slf4j/LoggerFactory and org/slf4j/spi/SLF4JServiceProvider (SLF4J 2), ahead of flink-dist's SLF4J 1.7 API; no JAR of lib has META-INF/services/%s, and Flink's log4j-slf4j-impl is a 1.x binding, which SLF4J 2 ignores", winner.Path, slf4jProviderService),
		Required: "flink-dist's SLF4J API winning (no other copy of org/slf4j in lib), or an SLF4J 2 provider in lib beside it",
		Fix:      fix})
}
