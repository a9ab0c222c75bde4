package admission

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Rule is one named check. Rules are data: the table below is the
// entrypoint's part of the rule catalogue, which `streamfusion rules`
// prints and docs/rules.md is generated from; the host CLI's packages
// (image, install, deploy, webhook) add theirs, of their own tiers.
type Rule struct {
	ID       string
	Severity Severity // the most a finding of it is; some also warn (Doc says when)
	Tier     Tier
	// Baked: a deep verdict (internal/baked) keeps its findings, and a
	// start with the verdict applies them instead of judging lib again.
	Baked bool
	Doc   string
	check func(*view) []Finding
}

// Tier is where a rule is judged.
type Tier string

const (
	// TierStart rules are judged at every start, by `streamfusion check`,
	// verify, bake and install: manifests, the host, the configuration.
	TierStart Tier = "start"
	// TierDeep rules read class files or native libraries: judged by the
	// host CLI's check, verify and bake and the webhook, and at start with
	// a baked verdict or STREAMFUSION_LINKAGE=true.
	TierDeep Tier = "deep"
	// TierImage rules judge an image as a whole (verify's guard).
	TierImage Tier = "image"
	// TierInstall rules judge an install's plan.
	TierInstall Tier = "install"
	// TierDeployment rules judge the images of one cluster together
	// (deployments, the webhook, audit).
	TierDeployment Tier = "deployment"
	// TierWebhook rules are a review's own (a session job's target and
	// JAR, an image that could not be judged).
	TierWebhook Tier = "webhook"
)

// libRule is checked before all others: without lib nothing else is known.
var libRule = Rule{ID: "host-lib", Severity: Error, Tier: TierStart, Doc: "Flink's lib directory is missing or cannot be listed."}

// Catalogue returns every rule, host-lib first.
func Catalogue() []Rule { return append([]Rule{libRule}, Rules...) }

// Rules is the rule table, in the order findings are reported.
var Rules = []Rule{
	{ID: "install-interrupted", Severity: Error, Tier: TierStart, Doc: "An install into lib has not finished (it was killed, or the machine went down, or it is running): lib holds a state nobody chose.", check: installInterrupted},
	{ID: "host-planner-missing", Severity: Error, Tier: TierStart, Doc: "lib holds no Flink planner JAR (flink-table-planner-loader-*.jar or flink-table-planner_2.1x-*.jar).", check: plannerMissing},
	{ID: "host-planner-both", Severity: Error, Tier: TierStart, Doc: "lib holds both the planner loader and the flink-table-planner_2.1x JAR.", check: plannerBoth},
	{ID: "host-planner-several", Severity: Error, Tier: TierStart, Doc: "lib holds more than one planner JAR of the same kind.", check: plannerSeveral},
	{ID: "host-planner-unversioned", Severity: Error, Tier: TierStart, Doc: "The planner JAR's manifest has no Implementation-Version.", check: plannerUnversioned},
	{ID: "host-planner-abi", Severity: Error, Tier: TierStart, Doc: "The planner's Flink release is not in the support matrix: its planner ABI is unknown.", check: plannerABI},
	{ID: "host-dist-missing", Severity: Error, Tier: TierStart, Doc: "lib holds no flink-dist*.jar.", check: distMissing},
	{ID: "host-dist-duplicate", Severity: Error, Tier: TierStart, Doc: "lib holds more than one flink-dist*.jar.", check: distDuplicate},
	{ID: "host-dist-unversioned", Severity: Error, Tier: TierStart, Doc: "flink-dist carries neither .flink-runtime.version.properties project.version nor Implementation-Version.", check: distUnversioned},
	{ID: "host-dist-mixed", Severity: Error, Tier: TierStart, Doc: "flink-dist and the planner come from different Flink releases.", check: distMixed},
	{ID: "host-jdk-missing", Severity: Error, Tier: TierStart, Doc: "No JDK found: neither $JAVA_HOME/release nor a java on PATH with a release file beside it.", check: jdkMissing},
	{ID: "host-jdk-unparseable", Severity: Error, Tier: TierStart, Doc: "The JDK release file's JAVA_VERSION cannot be read.", check: jdkUnparseable},
	{ID: "host-jdk-unsupported", Severity: Error, Tier: TierStart, Doc: "The JDK's major version is not one StreamFusion supports (11 or 17).", check: jdkUnsupported},
	{ID: "host-platform", Severity: Error, Tier: TierStart, Doc: "A payload with native libraries has none for the host platform (StreamFusion-Native-Platforms).", check: hostPlatform},
	{ID: "host-libc", Severity: Error, Tier: TierStart, Doc: "A payload with native libraries runs on a host whose libc is musl or unknown; the libraries need glibc.", check: hostLibc},
	{ID: "native-unreadable", Severity: Error, Tier: TierDeep, Doc: "A native library of a payload for the host's platform is not an ELF object the loader can map (a warning when it is beyond what the check reads). Checked by the CLI, the webhook and `streamfusion check`, at start only with STREAMFUSION_LINKAGE=true.", check: nativeUnreadable},
	{ID: "native-machine", Severity: Error, Tier: TierDeep, Doc: "A native library of a payload for the host's platform is built for another machine (e_machine, class, byte order) than the host's.", check: nativeMachine},
	{ID: "native-static-tls", Severity: Error, Tier: TierDeep, Doc: "A native library needs a static TLS block (DF_STATIC_TLS, or a PT_TLS segment with initial-exec relocations): StreamFusion's release validation rejects it, and a late dlopen fails once glibc's surplus static TLS is used up.", check: nativeStaticTLS},
	{ID: "native-symbol-version", Severity: Error, Tier: TierDeep, Doc: "A native library needs a symbol version (GLIBC_x.y, GLIBCXX_x.y.z, CXXABI_x.y) that the library of the root filesystem it comes from does not define.", check: nativeSymbolVersion},
	{ID: "native-needed", Severity: Error, Tier: TierDeep, Doc: "A native library needs a library (DT_NEEDED) that is neither in the loader's search path of the root filesystem, nor the JDK's, nor in the payload.", check: nativeNeeded},
	{ID: "loader-missing", Severity: Error, Tier: TierStart, Doc: "lib holds no StreamFusion loader payload.", check: loaderMissing},
	{ID: "loader-duplicate", Severity: Error, Tier: TierStart, Doc: "lib holds more than one StreamFusion loader payload.", check: loaderDuplicate},
	{ID: "loader-embedded-missing", Severity: Error, Tier: TierStart, Doc: "The loader declares no embedded core, or the entry it names is absent.", check: embeddedMissing},
	{ID: "loader-embedded-unreadable", Severity: Error, Tier: TierStart, Doc: "The loader's embedded core is not a readable JAR.", check: embeddedUnreadable},
	{ID: "loader-embedded-mismatch", Severity: Error, Tier: TierStart, Doc: "The embedded core differs from the loader in line, version or module identity.", check: embeddedMismatch},
	{ID: "core-missing", Severity: Error, Tier: TierStart, Doc: "lib holds no StreamFusion runtime core payload.", check: coreMissing},
	{ID: "core-duplicate", Severity: Error, Tier: TierStart, Doc: "lib holds more than one StreamFusion runtime core payload.", check: coreDuplicate},
	{ID: "core-mismatch", Severity: Error, Tier: TierStart, Doc: "The runtime core differs from the loader in line or version.", check: coreMismatch},
	{ID: "core-build-mismatch", Severity: Error, Tier: TierStart, Doc: "The runtime core and the loader's embedded core come from different builds (Build-Id).", check: coreBuild},
	{ID: "payload-unversioned", Severity: Error, Tier: TierStart, Doc: "A JAR holds StreamFusion content but no StreamFusion-Payload marker.", check: payloadUnversioned},
	{ID: "payload-malformed", Severity: Error, Tier: TierStart, Doc: "A payload's StreamFusion attributes are missing or malformed.", check: payloadMalformed},
	{ID: "payload-identity", Severity: Error, Tier: TierStart, Doc: "A payload's group, artifactId, module and kind do not fit together.", check: payloadIdentity},
	{ID: "payload-line", Severity: Error, Tier: TierStart, Doc: "A payload is built for another Flink line than the host's.", check: payloadLine},
	{ID: "payload-version", Severity: Error, Tier: TierStart, Doc: "A payload's release differs from the loader's.", check: payloadVersion},
	{ID: "payload-jdk", Severity: Error, Tier: TierStart, Doc: "A payload needs a newer JDK than the host's (Java-Release, Java-Runtime).", check: payloadJDK},
	{ID: "payload-duplicate-module", Severity: Error, Tier: TierStart, Doc: "The same StreamFusion module is installed more than once (a renamed copy, for example).", check: payloadDuplicate},
	{ID: "layout-usrlib", Severity: Error, Tier: TierStart, Doc: "A job JAR in usrlib bundles StreamFusion content.", check: layoutUsrlib},
	{ID: "layout-logging", Severity: Error, Tier: TierStart, Doc: "A StreamFusion payload bundles logging API classes (org/slf4j/).", check: layoutLogging},
	{ID: "layout-paimon-order", Severity: Error, Tier: TierStart, Doc: "streamfusion-paimon comes after a paimon-flink-* JAR on the classpath; Paimon takes the first format factory it finds.", check: layoutPaimon},
	{ID: "stock-line", Severity: Error, Tier: TierStart, Doc: "A stock connector or integration is built for another Flink line: an error when the major differs or a payload's StreamFusion-Stock-Requires names it, a warning otherwise.", check: stockLine},
	{ID: "stock-release", Severity: Error, Tier: TierStart, Doc: "An in-tree Flink module (flink-json, flink-avro, ...) is of another Flink release than the host's: an error for another minor, a warning for another patch.", check: stockRelease},
	{ID: "stock-duplicate", Severity: Error, Tier: TierStart, Doc: "The same stock connector, module or integration is in lib more than once, whatever the versions.", check: stockDuplicate},
	{ID: "layout-unreadable-jar", Severity: Error, Tier: TierStart, Doc: "A *.jar is not a regular file or not a readable ZIP archive, or a directory below lib cannot be listed.", check: layoutUnreadable},
	{ID: "config-file-line", Severity: Error, Tier: TierStart, Doc: "Flink fails at start on its config: the conf directory holds only the other line's file (flink-conf.yaml for a 2.x release, config.yaml for 1.18), or Flink cannot load the file (YAML syntax, a duplicate key, a key without a value, more than 50 aliases to collections), or the file is beyond what the reader reads (20,000 keys, 64 levels, aliases expanding to 100,000 values or 4 MiB): an error; a file larger than 1 MiB, which Flink may load, is a warning that it was not judged.", check: configFileLine},
	{ID: "line-experimental", Severity: Warning, Tier: TierStart, Doc: "The host runs the experimental Flink 1.18 line.", check: lineExperimental},
	{ID: "requires-missing", Severity: Warning, Tier: TierStart, Doc: "A module named in StreamFusion-Requires is not installed; the planner falls back to stock Flink.", check: requiresMissing},
	{ID: "stock-requires-missing", Severity: Warning, Tier: TierStart, Doc: "No JAR of the host's Flink line in lib satisfies a prefix of StreamFusion-Stock-Requires.", check: stockMissing},
	{ID: "classpath-shadowed", Severity: Error, Tier: TierDeep, Baked: true, Doc: "Two JARs hold the same class with different contents and the class loader takes one (lib in classpath order, usrlib child-first, lib's copy where a parent-first pattern applies; one finding per pair of JARs naming every hidden class); an error when the host's own code (flink-dist, the planner, the host's modules) then fails: Flink's own classes of a JAR built for another line win over the host's, or a member the host's copy declares does not resolve in the winning copy (or it cannot be read); a warning otherwise (the other JARs' uses are the linkage rules' to judge). Checked by the CLI and `streamfusion check`, at start only with STREAMFUSION_LINKAGE=true.", check: classpathShadowed},
	{ID: "linkage-class", Severity: Error, Tier: TierDeep, Baked: true, Doc: "A class reachable from a JAR's entry points uses a class that does not load on the host's classpath (missing, or a supertype missing). An error for StreamFusion payloads, the stock JARs they require and usrlib job JARs, and for any JAR whose code needs a class the host's own Flink lacks in a package it provides (a JAR built for another Flink release, named where its identity says); a class of a library nothing on the classpath provides is a warning, an error only for a payload or a stock JAR a payload requires whose own classes are built on it. A plugin's code is judged in the class loader Flink gives the plugin (its folder's JARs, lib only for plugin.classloader.parent-first-patterns): a class lib has but the plugin cannot see is an error when a configured location's scheme needs the plugin (real Flink: NoClassDefFoundError when it opens the location), a warning otherwise; what a plugin's bundled libraries name is not judged, Flink's own API is.", check: linkageClass},
	{ID: "linkage-method", Severity: Error, Tier: TierDeep, Baked: true, Doc: "A class reachable from a JAR's entry points calls a method the host's classes do not have (JVMS 5.4.3.3-4). An error when the owner is the host's own Flink's (relocated libraries aside) or as linkage-class.", check: linkageMethod},
	{ID: "linkage-field", Severity: Error, Tier: TierDeep, Baked: true, Doc: "A class reachable from a JAR's entry points uses a field the host's classes do not have (JVMS 5.4.3.2). Severity as linkage-method.", check: linkageField},
	{ID: "deep-verdict-unreadable", Severity: Warning, Tier: TierStart, Doc: "The image's baked deep verdict (lib/.streamfusion-deep-verdict, written by bake or check --write-verdict) is damaged, truncated, or of another format or rule catalogue; the start checks shadowing and linkage in full instead.", check: deepVerdictUnreadable},
	{ID: "bytecode-version", Severity: Error, Tier: TierDeep, Baked: true, Doc: "A class reachable from a JAR's entry points is compiled for a newer Java than the host JDK's. Severity as linkage-class.", check: bytecodeVersion},
	{ID: "layout-planner-bundled", Severity: Error, Tier: TierDeep, Doc: "A job JAR in usrlib, or a lib JAR other than the planner's own, bundles Flink's table planner (classes under org.apache.flink.table.planner.codegen): a second planner beside the host's, which does not fix a codegen linkage failure on TaskManagers (mismatched compiler and runtime payloads). Deep check only.", check: plannerBundled},
	{ID: "table-factory-broken", Severity: Error, Tier: TierDeep, Doc: "A META-INF/services/org.apache.flink.table.factories.Factory file of lib or usrlib names a class its class loader cannot find (an uber JAR that merged the service files of JARs it left out): ServiceLoader fails on it and Flink's FactoryUtil fails every SQL statement with \"Unexpected error when trying to load service provider\". Deep check only (not from a baked class index).", check: tableFactoryBroken},
	{ID: "table-factory-duplicate", Severity: Error, Tier: TierDeep, Doc: "Two different factory classes answer one identifier (factoryIdentifier()'s constant) for one kind of Flink's table factories (a source, a sink, a format, a catalog): FactoryUtil fails every statement that names it with \"Multiple factories for identifier\". An error when the two are in different JARs (two releases of one connector, most often); a warning when one JAR ships both (the real JDBC connector 3.3.0-1.20's two 'jdbc' catalog factories), whose other factories work. Deep check only.", check: tableFactoryDuplicate},
	{ID: "table-factory-unlisted", Severity: Warning, Tier: TierDeep, Doc: "A JAR of lib or usrlib holds a table factory (a concrete class named *Factory that implements a kind Flink's FactoryUtil is asked for, with a constant factoryIdentifier()) that no META-INF/services/org.apache.flink.table.factories.Factory file lists, and no listed factory answers its identifier: ServiceLoader never finds it, and a statement naming it fails with \"Could not find any factory for identifier\" (an uber JAR that kept another JAR's service file in place of its own). A warning: a deployment that never names it works. Flink's own modules are not read. Deep check only.", check: tableFactoryUnlisted},
	{ID: "table-factory-missing", Severity: Error, Tier: TierDeep, Doc: "A SQL file the process may run (one its arguments or the application's program-args name, or a *.sql file below usrlib) names a factory identifier in a CREATE TABLE's WITH clause ('connector', 'format', 'key.format', 'value.format') or a CREATE CATALOG's ('type') that no table factory of lib or usrlib answers: Flink fails every statement that uses it with \"Could not find any factory for identifier\". An error for a file the process is given; a warning for one of usrlib nothing names, and when a factory's identifier is computed. A FlinkDeployment whose spec.job.args (or $internal.application.program-args) name a usrlib file of its image is given that file: the webhook and audit (which then run the image's deep check) and `streamfusion deploy --deep` make the image's warning an error for it. The SQL is read by a tolerant scanner (internal/sqlscan says what it does not read). Deep check only.", check: tableFactoryMissing},
	{ID: "config-key-conflict", Severity: Warning, Tier: TierStart, Doc: "A key and its deprecated key are both set, to different values: Flink uses the key and ignores the deprecated one.", check: configKeyConflict},
	{ID: "config-unknown-key", Severity: Warning, Tier: TierStart, Doc: "A key the host's Flink does not read: a near name of a key it knows, or a key an other release had.", check: configUnknownKey},
	{ID: "config-taskmanager-flags", Severity: Warning, Tier: TierStart, Doc: "A TaskManager's JVM options lack the Arrow options StreamFusion needs (-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false).", check: configTaskManagerFlags},
	{ID: "config-env", Severity: Warning, Tier: TierStart, Doc: "GLIBC_TUNABLES sets glibc.rtld.optional_static_tls above 24576: glibc takes it out of every thread's stack and the JVM hangs or dies of SIGSEGV at its first subprocess (docs/glibc-tunables.md).", check: configEnv},
	{ID: "fs-scheme-unserved", Severity: Error, Tier: TierStart, Doc: "A location the configuration names (checkpoint, savepoint, HA storage, JobManager or HistoryServer archive, changelog storage; from the config file, FLINK_PROPERTIES or -D, or a FlinkDeployment's spec.flinkConfiguration against its image for verify -f, audit and the webhook) has a scheme no file system of the image serves, as Flink's FileSystem resolves it: the FileSystemFactory services of lib and of each plugin folder (scheme read from getScheme()'s bytecode), no Hadoop fallback for the schemes Flink serves only from plugins (s3, s3a, s3p, gs, oss, wasb(s), abfs(s)) unless fs.allowed-fallback-filesystems lists them, and Hadoop's otherwise. Flink fails at the first checkpoint, savepoint or HA write. A warning when a factory's scheme could not be read.", check: fsSchemeUnserved},
	{ID: "plugins-loose-jar", Severity: Warning, Tier: TierStart, Doc: "A JAR straight in plugins/, or in a subfolder of a plugin folder: Flink loads each subfolder of plugins/ as one plugin, from the *.jar files directly in it, so it is never loaded (fs-scheme-unserved is the error when a location needs it).", check: pluginsLoose},
	{ID: "plugins-empty-folder", Severity: Error, Tier: TierStart, Doc: "A folder below plugins/ holds no JAR directly (JARs of its subfolders do not count: Flink lists the folder's own files): Flink's plugin finder refuses it and the process fails at start.", check: pluginsEmpty},
	{ID: "plugins-release", Severity: Error, Tier: TierStart, Doc: "A plugin's JAR is a module of another Flink release than the host's (as stock-release judges lib's): its code calls the host's Flink API it was not built against (real Flink 2.2.0 with flink-s3-fs-hadoop 1.18.1 fails to create the file system: NoSuchMethodError). An error when the major differs and a location the configuration names has a scheme the plugin serves; a warning otherwise (real 2.2.0 opens s3 with the 2.1.1 plugin).", check: pluginsRelease},
	{ID: "plugins-enable-missing", Severity: Error, Tier: TierStart, Doc: "ENABLE_BUILT_IN_PLUGINS names a JAR $FLINK_HOME/opt does not hold: the official image's entrypoint exits 1 before Flink starts.", check: pluginsEnableMissing},
	{ID: "logging-binding-lost", Severity: Error, Tier: TierStart, Doc: "The SLF4J 2 API wins on lib's class path (a JAR before flink-dist holds org/slf4j/LoggerFactory and org/slf4j/spi/SLF4JServiceProvider) and no JAR of lib provides an SLF4J 2 binding (META-INF/services/org.slf4j.spi.SLF4JServiceProvider): SLF4J 2 ignores Flink's 1.x binding (log4j-slf4j-impl), and every log line goes to the no-operation logger.", check: loggingBindingLost},
	{ID: "logging-bridge-loop", Severity: Error, Tier: TierStart, Doc: "A JAR of lib provides the Log4j API's SLF4J provider (log4j-to-slf4j: org.apache.logging.slf4j.SLF4JProvider and its META-INF/services/org.apache.logging.log4j.spi.Provider) while the binding SLF4J takes (the first provider of an SLF4J 2 API that wins, or 1.7's first StaticLoggerBinder) is Log4j's (log4j-slf4j-impl, Flink's): the Log4j API picks that provider (priority 15, above log4j-core's 10), Log4j's binding refuses the loop, and the process fails at its first logger with \"log4j-slf4j-impl cannot be present with log4j-to-slf4j\".", check: loggingBridgeLoop},
	{ID: "reporter-unavailable", Severity: Warning, Tier: TierStart, Doc: "A metrics, traces or events reporter the configuration (or a FlinkDeployment's spec.flinkConfiguration) enables (PREFIX<name>.factory.class, filtered by metrics.reporters and the like) has no factory Flink will find: no factory.class (only the unsupported .class), or a factory class no service file of lib or of a plugin folder provides. Flink logs it and runs without the reporter, so this is a warning (an error under STREAMFUSION_STRICT); the webhook returns it to kubectl.", check: reporterUnavailable},
	{ID: "reporter-option-ignored", Severity: Warning, Tier: TierStart, Doc: "An option of one of Flink's own reporters (metrics, traces or events; not one Flink reads itself: factory.class, interval, scope.*, filter.*) that the reporter does not get as written. On Flink 2, config.yaml gives it as a YAML int, float or bool (port: 9251, not port: \"9251\"): Flink 2 hands the reporter the typed value, and the reporter's MetricConfig lookups see only strings, so it uses its default (Prometheus serves on 9249). On Flink 1, the value is in quotes: 1.x keeps them in the value (a Prometheus port in quotes sets up no reporter). A warning.", check: reporterOptionIgnored},
	{ID: "plugins-payload", Severity: Warning, Tier: TierStart, Doc: "A StreamFusion payload sits in plugins/, where it loads in isolation and never accelerates.", check: pluginsPayload},
}

func one(f Finding) []Finding { return []Finding{f} }

// name is a payload's module and release, for the "what" of a message;
// its line, where it matters, is the finding's Found.
func name(id *Identity) string {
	if !id.Marked {
		return id.String()
	}
	return cmp.Or(id.Module, "?") + " " + cmp.Or(id.Version, "?")
}

// coordinates are the Maven coordinates of a module's release on a line,
// as `streamfusion install` and `bake --payload` take them.
func coordinates(module, line, version string) string {
	return Group + ":" + ArtifactID(module, line) + ":" + version
}

func paths(js []*payload.JAR) string {
	var ps []string
	for _, j := range js {
		ps = append(ps, j.Path)
	}
	return strings.Join(ps, ", ")
}

// Host rules.

func plannerMissing(v *view) []Finding {
	if len(v.planner)+len(v.scala) > 0 {
		return nil
	}
	return one(Finding{Path: v.LibDir, Message: "the Flink planner is missing",
		Found:    "no flink-table-planner-loader-*.jar or flink-table-planner_2.1x-*.jar",
		Required: "exactly one planner JAR of Flink " + MatrixText(),
		Fix:      "use an unmodified Flink image, which keeps flink-table-planner-loader-<version>.jar in lib"})
}

func plannerBoth(v *view) []Finding {
	if len(v.planner) == 0 || len(v.scala) == 0 {
		return nil
	}
	return one(Finding{Path: v.LibDir, Message: "both Flink planners are in lib",
		Found:    paths(append(append([]*payload.JAR(nil), v.planner...), v.scala...)),
		Required: "either the planner loader or flink-table-planner_2.1x, not both",
		Fix:      "remove one; to use the Scala planner, move flink-table-planner-loader out of lib, as Flink's docs describe"})
}

func plannerSeveral(v *view) []Finding {
	var out []Finding
	for _, group := range [][]*payload.JAR{v.planner, v.scala} {
		if len(group) > 1 {
			out = append(out, Finding{Path: v.LibDir, Message: "more than one planner JAR of the same kind",
				Found: paths(group), Required: "exactly one planner JAR",
				Fix: "keep the one of the image's Flink release and remove the others"})
		}
	}
	return out
}

func plannerUnversioned(v *view) []Finding {
	p := v.thePlanner
	if p == nil || v.flink != "" {
		return nil
	}
	return one(Finding{Path: p.Path, Message: "the planner JAR does not say which Flink release it is",
		Found: "no Implementation-Version in META-INF/MANIFEST.MF", Required: "Implementation-Version of Flink " + MatrixText(),
		Fix: "restore the planner JAR of the image's Flink distribution"})
}

func plannerABI(v *view) []Finding {
	p := v.thePlanner
	if p == nil || v.flink == "" || v.release != nil {
		return nil
	}
	return one(Finding{Path: p.Path, Message: "unknown Flink planner ABI: StreamFusion is not built for this Flink release",
		Found: "Flink " + v.flink, Required: "Flink " + MatrixText(),
		Fix: "build the image FROM a supported Flink release, or install a StreamFusion release built for this one, if there is one"})
}

func distMissing(v *view) []Finding {
	if len(v.dists) > 0 {
		return nil
	}
	return one(Finding{Path: v.LibDir, Message: "flink-dist is missing", Found: "no flink-dist*.jar",
		Required: "exactly one flink-dist-<version>.jar", Fix: "use an unmodified Flink image; FLINK_LIB_DIR or FLINK_HOME may point at the wrong directory"})
}

func distDuplicate(v *view) []Finding {
	if len(v.dists) < 2 {
		return nil
	}
	return one(Finding{Path: v.LibDir, Message: "more than one flink-dist JAR", Found: paths(v.dists),
		Required: "exactly one flink-dist-<version>.jar", Fix: "remove the flink-dist JARs that do not belong to the image's Flink release"})
}

func distVersion(j *payload.JAR) string {
	if s := j.Properties["project.version"]; s != "" {
		return s
	}
	return j.ManifestValue("Implementation-Version")
}

func (v *view) theDist() *payload.JAR {
	if len(v.dists) == 1 && v.dists[0].Err == nil {
		return v.dists[0]
	}
	return nil
}

func distUnversioned(v *view) []Finding {
	d := v.theDist()
	if d == nil || distVersion(d) != "" {
		return nil
	}
	return one(Finding{Path: d.Path, Message: "flink-dist does not say which Flink release it is",
		Found:    "no project.version in .flink-runtime.version.properties and no Implementation-Version",
		Required: "a versioned flink-dist of the planner's release", Fix: "restore the flink-dist JAR of the image's Flink distribution"})
}

func distMixed(v *view) []Finding {
	d := v.theDist()
	if d == nil || v.flink == "" {
		return nil
	}
	dv := distVersion(d)
	if dv == "" || dv == v.flink {
		return nil
	}
	return one(Finding{Path: d.Path, Message: "mixed Flink distribution: flink-dist and the planner are of different releases",
		Found: "flink-dist " + dv + " with planner " + v.flink + " (" + v.thePlanner.Path + ")", Required: "flink-dist and planner of the same release",
		Fix: "install the flink-dist and planner JARs of one Flink release"})
}

func jdkMissing(v *view) []Finding {
	if v.JDK.Err == nil {
		return nil
	}
	return one(Finding{Path: v.JDK.Source, Message: "no JDK found", Found: v.JDK.Err.Error() + via(v.JDK),
		Required: "a JDK " + javaList() + " with a release file", Fix: "set JAVA_HOME to the JDK's directory, or put its bin/java on PATH"})
}

func jdkUnparseable(v *view) []Finding {
	if v.JDK.Err != nil || v.java != nil {
		return nil
	}
	return one(Finding{Path: v.JDK.Source, Message: "the JDK's version cannot be read", Found: fmt.Sprintf("JAVA_VERSION=%q", v.JDK.Version) + via(v.JDK),
		Required: "JAVA_VERSION such as \"17.0.15\"", Fix: "point JAVA_HOME at an unmodified JDK"})
}

// via says how Flink's scripts chose the JDK, when that was derived.
func via(j JDK) string {
	if j.Via == "" {
		return ""
	}
	return " (chosen by Flink's scripts through " + j.Via + ")"
}

func javaList() string {
	var s []string
	for _, m := range SupportedJava {
		s = append(s, strconv.Itoa(m))
	}
	return strings.Join(s, " or ")
}

func jdkUnsupported(v *view) []Finding {
	if v.java == nil || slices.Contains(SupportedJava, v.java.Major) {
		return nil
	}
	return one(Finding{Path: v.JDK.Source, Message: "unsupported JDK",
		Found: "Java " + v.java.Raw + via(v.JDK), Required: "Java " + javaList(), Fix: "build the image FROM a Flink image of a supported Java (the -java17 tags)"})
}

// natives lists every payload with native libraries, embedded cores included.
func (v *view) natives() []*Identity {
	var out []*Identity
	for _, id := range v.ids {
		if id.Native() {
			out = append(out, id)
		}
	}
	if v.embedded != nil && v.embedded.Native() {
		out = append(out, v.embedded)
	}
	return out
}

func hostPlatform(v *view) []Finding {
	var out []Finding
	host := v.Platform.Name()
	for _, id := range v.natives() {
		if slices.Contains(id.Platforms, host) {
			continue
		}
		found := "native libraries for " + strings.Join(id.Platforms, " ")
		if len(id.Platforms) == 0 {
			found = fmt.Sprintf("%d native libraries and no StreamFusion-Native-Platforms", id.NativeCount)
		}
		out = append(out, Finding{Path: id.Path, Message: name(id) + " has no native libraries for the host platform",
			Found: found, Required: host + " (the host's) in StreamFusion-Native-Platforms",
			Fix: "run on a platform the payload is built for, or install a StreamFusion build for this one"})
	}
	return out
}

func hostLibc(v *view) []Finding {
	if v.Platform.Libc == "glibc" {
		return nil
	}
	var out []Finding
	for _, id := range v.natives() {
		out = append(out, Finding{Path: id.Path, Message: name(id) + "'s native libraries cannot load on the host's libc",
			Found: v.Platform.Libc + " (" + v.Platform.Evidence + ")", Required: "glibc",
			Fix: "build the image FROM the official (Debian/Ubuntu based) Flink images, not an Alpine/musl base"})
	}
	return out
}

// Loader and core rules.

func (v *view) kind(k string) []*Identity {
	var out []*Identity
	for _, id := range v.ids {
		if id.Kind == k {
			out = append(out, id)
		}
	}
	return out
}

func loaderMissing(v *view) []Finding {
	if len(v.kind(KindLoader)) > 0 {
		return nil
	}
	return one(Finding{Path: v.LibDir, Message: "the StreamFusion loader is missing", Found: "no JAR with StreamFusion-Payload: loader",
		Required: "one " + LoaderModule + " JAR", Fix: "install " + Group + ":" + ArtifactID(LoaderModule, cmp.Or(v.line(), "2.2")) + " into lib"})
}

func loaderDuplicate(v *view) []Finding {
	return duplicated(v.kind(KindLoader), "StreamFusion loaders", "exactly one loader", "keep one loader of the release you deploy and remove the others")
}

// duplicated reports a payload kind installed more than once, at the second copy.
func duplicated(ids []*Identity, what, required, fix string) []Finding {
	if len(ids) < 2 {
		return nil
	}
	return one(Finding{Path: ids[1].Path, Message: what + " are installed more than once", Found: describeAll(ids),
		Required: required, Fix: fix})
}

func describeAll(ids []*Identity) string {
	var s []string
	for _, id := range ids {
		s = append(s, id.String()+" at "+id.Path)
	}
	return strings.Join(s, ", ")
}

func embeddedMissing(v *view) []Finding {
	if v.loader == nil {
		return nil
	}
	j := v.jar(v.loader.Path)
	switch {
	case v.loader.EmbeddedCore == "":
		return one(Finding{Path: v.loader.Path, Message: "the loader's embedded core is missing", Found: "no " + AttrEmbeddedCore + " attribute",
			Required: AttrEmbeddedCore + " naming the nested core JAR", Fix: "install an unmodified " + LoaderModule + " JAR"})
	case j.Nested == nil:
		return one(Finding{Path: v.loader.Path, Message: "the loader's embedded core is missing", Found: "no entry " + v.loader.EmbeddedCore,
			Required: "the entry named by " + AttrEmbeddedCore, Fix: "install an unmodified " + LoaderModule + " JAR"})
	}
	return nil
}

func embeddedUnreadable(v *view) []Finding {
	if v.loader == nil {
		return nil
	}
	if n := v.jar(v.loader.Path).Nested; n != nil && n.Err != nil {
		return one(Finding{Path: n.Path, Message: "the loader's embedded core cannot be read", Found: n.Err.Error(),
			Required: "a readable JAR", Fix: "install an unmodified " + LoaderModule + " JAR"})
	}
	return nil
}

func embeddedMismatch(v *view) []Finding {
	if v.loader == nil || v.jar(v.loader.Path).Nested == nil || v.jar(v.loader.Path).Nested.Err != nil {
		return nil
	}
	l, e := v.loader, v.embedded
	var found string
	switch {
	case e == nil || !e.Marked:
		found = "unversioned content, no StreamFusion-Payload marker"
	case len(e.Problems) > 0:
		found = "a malformed manifest: " + strings.Join(e.Problems, "; ")
	default:
		diffs := append([]string(nil), e.Incoherent...)
		if e.Kind != KindCore || e.Module != CoreModule {
			diffs = append(diffs, fmt.Sprintf("%s %s, not a %s core", e.Kind, e.Module, CoreModule))
		}
		if len(diffs) == 0 && e.Line == l.Line && e.Version == l.Version {
			return nil
		}
		found = e.String()
		if len(diffs) > 0 {
			found += ": " + strings.Join(diffs, "; ")
		}
	}
	return one(Finding{Path: v.jar(v.loader.Path).Nested.Path, Message: "the loader's embedded core does not match the loader",
		Found: found, Required: fmt.Sprintf("streamfusion-core %s (line %s), the loader's", l.Version, l.Line),
		Fix: "the loader JAR is damaged or was repacked: install an unmodified " + coordinates(LoaderModule, l.Line, l.Version)})
}

func coreMissing(v *view) []Finding {
	if len(v.kind(KindCore)) > 0 {
		return nil
	}
	want := "streamfusion-core"
	if v.loader != nil {
		want = fmt.Sprintf("%s:%s %s", Group, ArtifactID(CoreModule, v.loader.Line), v.loader.Version)
	}
	return one(Finding{Path: v.LibDir, Message: "the StreamFusion runtime core is missing", Found: "no JAR with StreamFusion-Payload: core",
		Required: "one " + CoreModule + " JAR", Fix: "install " + want + " into lib"})
}

func coreDuplicate(v *view) []Finding {
	return duplicated(v.kind(KindCore), "StreamFusion runtime cores", "exactly one runtime core", "keep the core of the loader's release and remove the others")
}

func coreMismatch(v *view) []Finding {
	c, l := v.core, v.loader
	if c == nil || l == nil || (c.Line == l.Line && c.Version == l.Version) {
		return nil
	}
	return one(Finding{Path: c.Path, Message: "the runtime core does not match the loader at " + l.Path,
		Found: c.String(), Required: fmt.Sprintf("streamfusion-core %s (line %s), the loader's", l.Version, l.Line),
		Fix: "install " + coordinates(CoreModule, l.Line, l.Version) + " in its place"})
}

func coreBuild(v *view) []Finding {
	c, e := v.core, v.embedded
	if c == nil || e == nil || c.BuildID == "" || e.BuildID == "" || c.BuildID == e.BuildID {
		return nil
	}
	return one(Finding{Path: c.Path, Message: "the runtime core and the loader's embedded core come from different builds",
		Found: "Build-Id " + c.BuildID, Required: "Build-Id " + e.BuildID + ", the embedded core's",
		Fix: "install the runtime core and the loader from the same StreamFusion build"})
}

// Rules for every payload.

func payloadUnversioned(v *view) []Finding {
	var out []Finding
	for _, id := range v.ids {
		if !id.Marked {
			out = append(out, Finding{Path: id.Path, Message: "unversioned StreamFusion content",
				Found: id.Evidence + " and no StreamFusion-Payload marker", Required: "a payload manifest (StreamFusion-Payload and the identity attributes)",
				Fix: "install the released StreamFusion JAR, or remove this JAR (a repackaged or shaded copy)"})
		}
	}
	return out
}

func payloadMalformed(v *view) []Finding {
	var out []Finding
	for _, id := range v.ids {
		if id.Marked && len(id.Problems) > 0 {
			out = append(out, Finding{Path: id.Path, Message: "malformed StreamFusion manifest",
				Found: strings.Join(id.Problems, "; "), Required: "the attributes of the payload contract",
				Fix: "install the released StreamFusion JAR; its manifest was damaged or hand-written"})
		}
	}
	return out
}

func payloadIdentity(v *view) []Finding {
	var out []Finding
	for _, id := range v.ids {
		if len(id.Incoherent) > 0 {
			out = append(out, Finding{Path: id.Path, Message: "incoherent identity: " + strings.Join(id.Incoherent, "; "),
				Found:    fmt.Sprintf("%s %s, line %s", id.Kind, id.Module, id.Line),
				Required: fmt.Sprintf("artifact %s:%s", Group, ArtifactID(id.Module, id.Line)),
				Fix:      "install the released StreamFusion JAR for this line"})
		}
	}
	return out
}

func payloadLine(v *view) []Finding {
	line := v.line()
	if line == "" {
		return nil
	}
	var out []Finding
	for _, id := range v.ids {
		if id.Valid() && id.Line != line {
			out = append(out, Finding{Path: id.Path, Message: name(id) + " is built for another Flink line",
				Found: "line " + id.Line + ", artifact " + id.Artifact, Required: "line " + line + " (the host runs " + "Flink " + v.flink + ")",
				Fix: "install " + coordinates(id.Module, line, id.Version) + " in its place, or remove it"})
		}
	}
	return out
}

func payloadVersion(v *view) []Finding {
	if v.loader == nil {
		return nil
	}
	var out []Finding
	for _, id := range v.ids {
		if id.Valid() && id.Kind == KindExtension && id.Version != v.loader.Version {
			out = append(out, Finding{Path: id.Path, Message: id.Module + " is of another release than the loader at " + v.loader.Path,
				Found: "version " + id.Version, Required: "version " + v.loader.Version,
				Fix: "install " + coordinates(id.Module, id.Line, v.loader.Version) + " in its place"})
		}
	}
	return out
}

func payloadJDK(v *view) []Finding {
	if v.java == nil {
		return nil
	}
	ids := v.ids
	if v.embedded != nil {
		ids = append(append([]*Identity(nil), ids...), v.embedded)
	}
	var out []Finding
	for _, id := range ids {
		if need := id.JavaNeeded(); id.Valid() && need > v.java.Major {
			out = append(out, Finding{Path: id.Path, Message: name(id) + " needs a newer JDK than the host's",
				Found: "Java " + v.java.Raw + " (" + v.JDK.Source + ")", Required: "Java " + strconv.Itoa(need) + " or newer",
				Fix: "build the image FROM a Flink image with that Java (for example the -java17 tags)"})
		}
	}
	return out
}

func payloadDuplicate(v *view) []Finding {
	seen := map[string][]*Identity{}
	var order []string
	for _, id := range v.ids {
		if id.Valid() && id.Kind == KindExtension {
			if seen[id.Module] == nil {
				order = append(order, id.Module)
			}
			seen[id.Module] = append(seen[id.Module], id)
		}
	}
	var out []Finding
	for _, m := range order {
		if ids := seen[m]; len(ids) > 1 {
			out = append(out, Finding{Path: ids[1].Path, Message: "module " + m + " is installed more than once; the first on the classpath wins",
				Found: describeAll(ids), Required: "each module once", Fix: "remove all but one copy"})
		}
	}
	return out
}

// Layout rules.

func layoutUsrlib(v *view) []Finding {
	var out []Finding
	for _, j := range v.Usrlib {
		if id := Identify(j); id != nil {
			out = append(out, Finding{Path: j.Path, Message: "a job JAR bundles StreamFusion content", Found: id.Evidence,
				Required: "no StreamFusion classes in job JARs", Fix: "mark the StreamFusion dependencies of the job as provided; the image's lib supplies them"})
		}
	}
	return out
}

func layoutLogging(v *view) []Finding {
	var out []Finding
	for _, id := range v.ids {
		if j := v.jar(id.Path); j != nil && j.Logging != "" {
			out = append(out, Finding{Path: id.Path, Message: "a StreamFusion payload bundles logging API classes", Found: j.Logging,
				Required: "no org/slf4j/ classes (Flink's lib provides the logging API)", Fix: "install the released StreamFusion JAR, not a shaded fat JAR"})
		}
	}
	return out
}

func layoutPaimon(v *view) []Finding {
	sf, stock := -1, -1
	for i, j := range v.Classpath {
		if id := v.byPath[j.Path]; id != nil && id.Module == "streamfusion-paimon" && sf < 0 {
			sf = i
		}
		if strings.HasPrefix(path.Base(j.Path), "paimon-flink-") && stock < 0 {
			stock = i
		}
	}
	if sf < 0 || stock < 0 || sf < stock {
		return nil
	}
	return one(Finding{Path: v.Classpath[sf].Path, Message: "streamfusion-paimon comes too late on the classpath, so Paimon never uses it",
		Found:    fmt.Sprintf("position %d, after %s at position %d", sf+1, v.Classpath[stock].Path, stock+1),
		Required: "streamfusion-paimon before every paimon-flink-* JAR",
		Fix:      "rename the StreamFusion JAR so it sorts first (the classpath is sorted by file name), for example " + path.Join(path.Dir(v.Classpath[sf].Path), "00-streamfusion-paimon.jar")})
}

func layoutUnreadable(v *view) []Finding {
	var out []Finding
	for _, u := range v.Unlisted {
		out = append(out, Finding{Path: u.Path, Message: "cannot list this directory, so JARs in it may be missing from the check", Found: u.Err.Error(),
			Required: "every directory below lib readable by the container's user", Fix: "make it readable (chmod a+rx), or remove it"})
	}
	for _, group := range [][]*payload.JAR{v.Classpath, v.Usrlib, v.Plugins} {
		for _, j := range group {
			if j.Err != nil {
				out = append(out, Finding{Path: j.Path, Message: "cannot read this JAR", Found: j.Err.Error(),
					Required: "a regular file holding a readable ZIP archive", Fix: "replace or remove it"})
			}
		}
	}
	return out
}

func installInterrupted(v *view) []Finding {
	if v.InstallJournal == "" {
		return nil
	}
	home, how := path.Dir(v.LibDir), ""
	if path.Base(v.LibDir) == "lib" {
		how = "streamfusion install --recover --flink-home " + home
	} else {
		how = "FLINK_HOME=" + home + " FLINK_LIB_DIR=" + v.LibDir + " streamfusion install --recover"
	}
	return one(Finding{Path: v.InstallJournal, Message: "an install into lib has not finished",
		Found: "its journal (the install was killed, the machine went down, or it is still running)", Required: "no unfinished install",
		Fix: "run '" + how + "' on this host: it waits for a running install, then completes the interrupted one or rolls it back"})
}

// Warnings.

func lineExperimental(v *view) []Finding {
	if v.release == nil || v.release.Support != Experimental {
		return nil
	}
	return one(Finding{Path: v.thePlanner.Path, Message: "the host's Flink line is experimental for StreamFusion",
		Found: v.hostText(), Required: "a supported line for production", Fix: "move to Flink 2.2 when you can; STREAMFUSION_STRICT=true refuses experimental lines"})
}

func (v *view) modules() map[string]bool {
	m := map[string]bool{}
	for _, id := range v.ids {
		if id.Valid() {
			m[id.Module] = true
		}
	}
	return m
}

func requiresMissing(v *view) []Finding {
	have := v.modules()
	var out []Finding
	for _, id := range v.ids {
		for _, r := range id.Requires {
			if id.Valid() && !have[r] {
				out = append(out, Finding{Path: id.Path, Message: name(id) + " requires a module that is not installed; its operators fall back to stock Flink",
					Found: "no " + r + " in lib", Required: r + " " + id.Version, Fix: "install " + coordinates(r, id.Line, id.Version)})
			}
		}
	}
	return out
}

func pluginsPayload(v *view) []Finding {
	var out []Finding
	for _, j := range v.Plugins {
		if id := Identify(j); id != nil {
			out = append(out, Finding{Path: j.Path, Message: "a StreamFusion payload in plugins/ loads in isolation and never accelerates",
				Found: id.String(), Required: "StreamFusion payloads in lib", Fix: "move it into lib, or remove it"})
		}
	}
	return out
}
