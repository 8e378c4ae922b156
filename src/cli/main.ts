/**
 * gnnctl's command line. This file only declares commands and their options; each command's
 * implementation lives in `commands/<name>.ts` and is imported lazily (TF.js and DuckDB load only
 * when a command needs them).
 */
import { Command, CommanderError, Option } from 'commander';
import { ExitCode } from '../core/errors.js';
import { reportError, runCommand, type CommandOutput } from './run.js';
import { VERSION } from '../core/version.js';

type Opts = Record<string, unknown> & { json?: boolean; quiet?: boolean };

/** Shared option definitions, reused across commands so flags mean the same everywhere. */
const opt = {
  config: () => new Option('-c, --config <file>', 'config file (YAML)').makeOptionMandatory(),
  json: () => new Option('--json', 'print one JSON result object on stdout (logs go to stderr)'),
  quiet: () => new Option('-q, --quiet', 'no progress display or info logs'),
  artifacts: () => new Option('--artifacts <dir>', 'artifact folder (default: the config\'s `artifacts` or ./artifacts)'),
  backend: () => new Option('--backend <name>', 'tensor backend').choices(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'),
  failUnder: () => new Option('--fail-under <metric=value...>', 'quality gate: exit 4 when a metric is below the value (e.g. test.auroc=0.7)'),
};

function action(load: () => Promise<(opts: Opts) => Promise<CommandOutput>>) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const opts = { ...cmd.optsWithGlobals(), _args: cmd.args } as Opts;
    const impl = await load();
    process.exitCode = await runCommand(opts, () => impl(opts));
  };
}

export function buildProgram(): Command {
  const program = new Command('gnnctl')
    .description('Relational tables to production graph models: graph → train → embed → distill → export → serve')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  const datasets = program.command('datasets').description('bundled synthetic data');
  datasets
    .command('synth')
    .description('write H&M-shaped synthetic tables (customers, articles, transactions) with planted graph signals')
    .requiredOption('--out <dir>', 'output folder')
    .addOption(new Option('--size <size>', 'dataset size').choices(['tiny', 'small', 'medium', 'large']).default('small'))
    .option('--seed <n>', 'random seed', '0')
    .addOption(new Option('--format <format>', 'file format').choices(['csv', 'parquet']).default('csv'))
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/synth.js')).synthCommand));

  const graph = program.command('graph').description('build and inspect the relational graph');
  graph
    .command('build')
    .description('tables → graph artifact (node ids, time-sorted CSR per edge type, fitted encoders); cached by config and data')
    .addOption(opt.config())
    .addOption(opt.artifacts())
    .option('--force', 'rebuild even when a cached build exists')
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/graph.js')).graphBuildCommand as never));
  graph
    .command('inspect')
    .description('row counts, edge degree statistics and each column\'s encoder (builds the graph if needed)')
    .addOption(opt.config())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/graph.js')).graphInspectCommand as never));

  program
    .command('train')
    .description('train a deep GNN (GraphSAGE/GAT) on a predictive task; writes artifacts/runs/<id>/')
    .addOption(opt.config())
    .requiredOption('-t, --task <name>', 'task name from the config')
    .addOption(opt.backend())
    .option('--init-from <run>', 'fine-tune: start from this run\'s weights and encoders (run id, folder or latest:<task>)')
    .option('--epochs <n>', 'override model.epochs')
    .addOption(opt.artifacts())
    .addOption(opt.failUnder())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/train.js')).trainCommand as never));

  const runs = program.command('runs').description('training and distillation runs');
  runs
    .command('list')
    .description('runs with task, status, main test metric and date')
    .option('-c, --config <file>', 'config (for its artifacts folder)')
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/runs.js')).runsListCommand as never));

  program
    .command('embed')
    .description('batch embeddings of every entity of a table at an anchor time → embeddings.parquet')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'trained run (id, folder, or latest:<task>)')
    .option('--table <name>', 'table to embed (default: the task\'s entity table)')
    .option('--anchor-time <time>', 'ISO time or "latest" (the newest time in the data)', 'latest')
    .option('--out <path>', 'output file (default: artifacts/embeddings/<run>/<anchor>/embeddings.parquet)')
    .option('--shard <i/n>', 'embed the i-th of n disjoint parts into a part file (e.g. $JOB_COMPLETION_INDEX/N)')
    .addOption(new Option('--mode <mode>', 'exact: deterministic layer-wise over the training neighbourhoods; sampled: the training fanouts').choices(['exact', 'sampled']).default('exact'))
    .option('--allow-schema-drift', 'embed even when the data\'s schema differs from the run\'s')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/embed.js')).embedCommand as never));

  program
    .command('distill')
    .description('train the shallow serving model from fact rows + base-run embeddings + recent interactions')
    .addOption(opt.config())
    .option('--base <run>', 'base (deep) run: id, folder or latest:<task> (default: latest run of distillation.base)')
    .option('--task <name>', 'serving task (default: distillation.task)')
    .option('--embeddings <path>', 'embedding snapshots (file, folder or glob); default: computed from the base run')
    .option('--epochs <n>', 'override distillation.epochs')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.failUnder())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/distill.js')).distillCommand as never));

  program
    .command('export')
    .description('distilled run → Triton model repository (config.pbtxt + ONNX with the embeddings inside)')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'distilled run: id, folder or latest:<task>')
    .option('--embeddings <path...>', 'embedding files/folders (default: embed each key table now with the base run)')
    .option('--out <dir>', 'model repository (default: artifacts/model_repository)')
    .option('--name <name>', 'model name (default: export.name)')
    .option('--version <n>', 'version number (default: last + 1)')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/export.js')).exportCommand as never));

  program
    .command('pipeline')
    .description('graph → train → embed → distill → export → serve smoke request; reuses unchanged stages')
    .addOption(opt.config())
    .option('--force', 'redo every stage even when its artifact exists')
    .option('--epochs <n>', 'override the deep model\'s epochs')
    .option('--distill-epochs <n>', 'override the student\'s epochs')
    .option('--no-smoke', 'skip the serve smoke request')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.failUnder())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/pipeline.js')).pipelineCommand as never));

  program
    .command('refresh')
    .description('daily job: embeddings from the deployed base run at the newest data → next model version (no retraining)')
    .addOption(opt.config())
    .option('--model-repository <dir>', 'model repository (default: artifacts/model_repository)')
    .option('--run <run>', 'distilled run to serve (default: the one the latest version came from)')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/pipeline.js')).refreshCommand as never));

  program
    .command('check')
    .description('embedding age and schema fingerprints of a model repository; exit 4 when stale or skewed')
    .option('--model-repository <dir>', 'model repository (default: artifacts/model_repository)')
    .option('-c, --config <file>', 'config: compare with the current data (and use its newest time as "now")')
    .option('--now <time>', 'reference time: ISO time, or "clock" (default: newest data time with --config, else the clock)')
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/pipeline.js')).checkCommand as never));

  const config = program.command('config').description('config file tools');
  config
    .command('validate')
    .description('check a config (YAML, schema, cross-field rules) without touching data')
    .addOption(opt.config())
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/config.js')).configValidateCommand as never));
  config
    .command('reference')
    .description('print the config reference (Markdown, generated from the schema)')
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/config.js')).configReferenceCommand as never));

  program
    .command('report')
    .description('self-contained HTML report of a train or distill run (metrics, curves, calibration, ablations, freshness); opens offline')
    .argument('<run>', 'run id, run folder, or latest:<task>')
    .option('--out <file>', 'output file (default: <run dir>/report.html)')
    .option('-c, --config <file>', 'config (for its artifacts folder)')
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(
      action(async () => {
        const { reportCommand } = await import('./commands/report.js');
        return (o: Opts) => reportCommand({ ...o, run: String((o._args as string[])[0]) });
      }),
    );

  program
    .command('serve')
    .description('serve a Triton model repository over KServe V2 HTTP: dynamic batching, Prometheus /metrics, hot reload of new versions; graceful stop on SIGTERM/SIGINT')
    .requiredOption('--model-repository <dir>', 'Triton model repository (what `gnnctl export` writes)')
    .option('--port <n>', 'HTTP port (0 picks a free one)', '8000')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--poll-interval <t>', 'seconds between repository scans for new versions (e.g. 2, 500ms); 0 turns hot reload off', '2')
    .option('--max-body-size <size>', 'largest request body, in bytes or e.g. 8MiB', '4MiB')
    .addOption(new Option('--ort-thread <where>', 'where onnxruntime runs: a worker thread (model loads never stall requests) or the main thread (least CPU)').choices(['worker', 'main']).default('worker'))
    .option('--ort-threads <n>', 'onnxruntime intra-op threads per session', '1')
    .option('--shutdown-timeout <t>', 'seconds shutdown waits for in-flight requests before closing connections', '30')
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/serve.js')).serveCommand as never));

  const bench = program.command('bench').description('benchmarks of gnnctl\'s stages');
  bench
    .command('serve')
    .description('open-loop constant-rate load against a KServe V2 server (gnnctl serve or Triton): offered and achieved QPS, latency percentiles from the scheduled send time, errors by kind')
    .requiredOption('--url <url>', 'server base URL, e.g. http://127.0.0.1:8000')
    .requiredOption('--model <name>', 'model name')
    .option('--model-version <v>', 'model version (default: the server\'s latest)')
    .requiredOption('--rate <qps>', 'requests per second offered')
    .requiredOption('--duration <s>', 'seconds of measured load')
    .option('--warmup <s>', 'seconds of load before the measured window', '0')
    .option('--concurrency <n>', 'most connections open at once', '64')
    .option('--pool <n>', 'distinct pre-built requests', '512')
    .option('--max-sequence <n>', 'longest RTI sequence', '32')
    .option('--keys <file...>', 'known keys: embeddings.parquet files (each feeds the input named like its key column) or a text file with one key per line')
    .option('--known-key-rate <r>', 'share of requests with a known key (with --keys)', '0.9')
    .option('--seed <n>', 'random seed', '1')
    .addOption(new Option('--client <kind>', 'the generator\'s HTTP client: raw (lean keep-alive HTTP/1.1) or node (http.Agent)').choices(['raw', 'node']).default('raw'))
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/bench.js')).benchServeCommand as never));

  program
    .command('doctor')
    .description('show the tensor backend in use and why others were skipped, a matmul speed probe, and whether DuckDB and onnxruntime-node work')
    .addOption(opt.backend())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/doctor.js')).doctorCommand as never));

  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version exit 0; a usage error is a config-class error.
      return e.exitCode === 0 ? ExitCode.ok : ExitCode.config;
    }
    return reportError(e);
  }
}
