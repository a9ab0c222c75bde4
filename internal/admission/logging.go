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

// loggingBridgeLoop reports Log4j's SLF4J provider (log4j-to-slf4j) on
// lib's class path while the binding SLF4J takes is Log4j's (Flink's
// log4j-slf4j-impl): the Log4j API takes the provider of the highest
// priority among those its ServiceLoader finds, and log4j-to-slf4j's
// (15) is above log4j-core's (10), so Log4j's API logs through SLF4J while
// SLF4J logs through Log4j. Log4j's binding refuses that loop: the first
// SLF4J logger throws "log4j-slf4j-impl cannot be present with
// log4j-to-slf4j", which a Flink process's first class takes down with
// it. Real Flink 2.2.0 and 1.18.1 do (internal/realflink's logging
// oracle). The binding SLF4J takes is that of the API that wins (the
// first JAR holding org/slf4j/LoggerFactory, flink-dist last): SLF4J 2's
// first provider (META-INF/services), 1.7's first StaticLoggerBinder. With
// another backend there (Logback), log4j-to-slf4j is the way to it, and
// no loop. The provider is known by its class and its service file; a
// log4j2.provider system property, which could pick another, is not read.
func loggingBridgeLoop(v *view) []Finding {
	var bridge, api, binding *payload.JAR
	for _, j := range v.Classpath {
		if j.Err != nil {
			continue
		}
		if j.Log4jToSLF4J && bridge == nil {
			bridge = j
		}
		if j.SLF4JFactory && api == nil {
			api = j
		}
	}
	if bridge == nil || api == nil {
		return nil
	}
	for _, j := range v.Classpath {
		if j.Err == nil && (api.SLF4JProviders && slices.Contains(j.Services, slf4jProviderService) || !api.SLF4JProviders && j.SLF4JBinder) {
			binding = j
			break
		}
	}
	if binding == nil || !binding.SLF4JToLog4j {
		return nil // no binding (logging-binding-lost's), or another backend
	}
	return one(Finding{Path: bridge.Path,
		Message:  "Log4j's API would log through SLF4J while SLF4J logs through Log4j: Log4j's SLF4J binding refuses the loop, and the process fails at its first logger (\"log4j-slf4j-impl cannot be present with log4j-to-slf4j\")",
		Found:    fmt.Sprintf("%s provides the Log4j API's SLF4J provider (log4j-to-slf4j: org.apache.logging.slf4j.SLF4JProvider in its META-INF/services/%s, priority 15, above log4j-core's 10); SLF4J (the API of %s) binds %s, Log4j's binding", bridge.Path, payload.Log4jProviderService, api.Path, binding.Path),
		Required: "no log4j-to-slf4j in lib while SLF4J is bound to Log4j (Flink's logging), or SLF4J bound to another backend (Logback) instead",
		Fix:      fmt.Sprintf("remove %s from lib, or rebuild it without org.apache.logging.log4j:log4j-to-slf4j (exclude it from the shaded JAR)", bridge.Path)})
}
