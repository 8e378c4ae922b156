/**
 * gnnctl's command line. This file only declares commands and their options; each command's
 * implementation lives in `commands/<name>.ts` and is imported lazily (TF.js and DuckDB load only
 * when a command needs them).
 */
import { Command, CommanderError, Option } from 'commander';
import { ExitCode } from '../core/errors.js';
import { reportError, runCommand, type CommandOutput } from './run.js';
import { VERSION } from '../core/version.js';
import { publishOptions } from './publish_flags.js';
import { budgetFlag, bytesFlag, choiceFlag, externalDataFlag, forCommander, intFlag, numberFlag, secondsFlag, shardFlag, timeFlag, workersFlag } from './flags.js';

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

/** Typed option: its value goes through a flags.ts parser, so a bad value exits 2 before any work. */
function typed<T>(flags: string, description: string, parse: (v: unknown) => T): Option {
  return new Option(flags, description).argParser(forCommander(parse));
}

/** Shown after each command's --help, keyed by the command's path. */
const EXAMPLES: Record<string, string[]> = {
  'datasets synth': ['gnnctl datasets synth --out datasets/retail --size small', 'gnnctl datasets synth --out datasets/big --size medium --format parquet --seed 7'],
  'graph build': ['gnnctl graph build --config configs/retail.yaml', 'gnnctl graph build --config configs/retail.yaml --task fraud --force --json'],
  'graph inspect': ['gnnctl graph inspect --config configs/retail.yaml', 'gnnctl graph inspect --config configs/retail.yaml --task fraud', 'gnnctl graph inspect --config configs/retail.yaml --task churn --features'],
  train: ['gnnctl train --config configs/retail.yaml --task churn', 'gnnctl train --config configs/retail.yaml --task fraud --epochs 5 --fail-under test.auroc=0.7 --json', 'gnnctl train --config configs/bursty.yaml --task churn --search --search-budget 10m'],
  'runs list': ['gnnctl runs list --config configs/retail.yaml'],
  'runs show': ['gnnctl runs show latest:churn --config configs/retail.yaml', 'gnnctl runs show artifacts/runs/<run-id> --json'],
  embed: ['gnnctl embed --config configs/retail.yaml --run latest:churn', 'gnnctl embed --config configs/retail.yaml --run latest:churn --anchor-time 2020-09-01 --shard 0/4'],
  predict: [
    'gnnctl predict --config configs/retail.yaml --run latest:churn',
    'gnnctl predict --config configs/retail.yaml --run latest:item_sales --anchor-time 2020-09-01 --shard 0/4 --with-embeddings --json',
  ],
  evaluate: ['gnnctl evaluate --config configs/retail.yaml --run latest:churn', 'gnnctl evaluate --config configs/retail.yaml --run latest:churn --from 2020-06-01 --to 2020-09-23 --fail-under test.auroc=0.6 --json'],
  distill: ['gnnctl distill --config configs/retail.yaml', 'gnnctl distill --config configs/retail.yaml --base latest:fraud --epochs 10 --json'],
  'recommender distill': ['gnnctl recommender distill --config configs/retail.yaml', 'gnnctl recommender distill --config configs/retail.yaml --user-base latest:churn --item-base latest:item_sales --epochs 10 --json'],
  'recommender export': ['gnnctl recommender export --config configs/retail.yaml --run latest:next_purchases-session', 'gnnctl recommender export --config configs/retail.yaml --run latest:next_purchases-session --version 3 --json'],
  export: ['gnnctl export --config configs/retail.yaml --run latest:fraud', 'gnnctl export --config configs/retail.yaml --run latest:fraud --version 5 --json'],
  pipeline: ['gnnctl pipeline --config configs/retail.yaml', 'gnnctl pipeline --config configs/retail.yaml --epochs 2 --no-smoke --json'],
  refresh: ['gnnctl refresh --config configs/retail.yaml', 'gnnctl refresh --config configs/retail.yaml --predict latest:churn latest:item_sales'],
  check: ['gnnctl check --model-repository artifacts/model_repository', 'gnnctl check --config configs/retail.yaml --drift-threshold 0.2 --drift-window 14d --json'],
  'config validate': ['gnnctl config validate --config configs/retail.yaml'],
  'config reference': ['gnnctl config reference > docs/config.md'],
  report: ['gnnctl report latest:fraud --config configs/retail.yaml', 'gnnctl report artifacts/runs/<run-id> --out /tmp/report.html'],
  serve: [
    'gnnctl serve --model-repository artifacts/model_repository',
    'gnnctl serve --model-repository /models --host 0.0.0.0 --auth-token-file /etc/gnnctl/tokens --auth-open-health --tls-cert tls.crt --tls-key tls.key',
    'gnnctl serve --model-repository artifacts/model_repository --request-timeout 500ms --max-sequence-length 64',
    'gnnctl serve --model-repository artifacts/model_repository --grpc-port 8001',
  ],
  'rollout pin': ['gnnctl rollout pin --model-repository artifacts/model_repository --model online-model'],
  'rollout start': ['gnnctl rollout start --model-repository artifacts/model_repository --model online-model --canary 2 --weight 5%'],
  'rollout set': ['gnnctl rollout set --model-repository artifacts/model_repository --model online-model --weight 0.5'],
  'rollout promote': ['gnnctl rollout promote --model-repository artifacts/model_repository --model online-model'],
  'rollout rollback': ['gnnctl rollout rollback --model-repository artifacts/model_repository --model online-model'],
  'rollout status': ['gnnctl rollout status --model-repository artifacts/model_repository --model online-model --json'],
  'rollout end': ['gnnctl rollout end --model-repository artifacts/model_repository --model online-model'],
  'bench serve': [
    'gnnctl bench serve --url http://127.0.0.1:8000 --model online-model --rate 1000 --duration 30',
    'gnnctl bench serve --url http://127.0.0.1:8000 --protocol grpc --grpc-address 127.0.0.1:8001 --model online-model --rate 1000 --duration 30',
    'gnnctl bench serve --url http://127.0.0.1:8000 --model online-model --sequence-lengths 4,8,16,32 --pool 128 --write-payloads payloads/ --duration 1',
    'gnnctl bench serve --url http://127.0.0.1:8000 --model online-model --payloads payloads/ --sweep 500,1000,2000,3000,4000 --duration 60',
  ],
  doctor: ['gnnctl doctor', 'gnnctl doctor --backend wasm --json'],
  'datasets synth-mesh': ['gnnctl datasets synth-mesh --out datasets/mesh', 'gnnctl datasets synth-mesh --out datasets/mesh-500 --services 500 --hours 96 --seed 7'],
  'anomaly fit': ['gnnctl anomaly fit --config datasets/mesh/config.yaml', 'gnnctl anomaly fit --config mesh.yaml --from 2026-01-05 --until 2026-01-06 --json'],
  'anomaly score': ['gnnctl anomaly score --config datasets/mesh/config.yaml --run latest', 'gnnctl anomaly score --config mesh.yaml --run <run-id> --from 2026-01-06 --to 2026-01-07 --out scores.parquet --json', 'gnnctl anomaly score --config mesh.yaml --run latest --runtime tfjs'],
  'anomaly watch': ['gnnctl anomaly watch --config datasets/mesh/config.yaml --run latest --interval 15s', 'gnnctl anomaly watch --config mesh.yaml --run <run-id> --prometheus http://127.0.0.1:9090 --alertmanager http://127.0.0.1:9093 --port 9464'],
};

/** The command's path below the root, e.g. "graph build". */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c && c.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Every command without subcommands, depth first. */
export function leafCommands(cmd: Command): Command[] {
  return cmd.commands.length === 0 ? [cmd] : cmd.commands.flatMap(leafCommands);
}

function addExamples(program: Command): void {
  for (const cmd of leafCommands(program)) {
    const lines = EXAMPLES[commandPath(cmd)];
    if (lines) cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
  }
}

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
    .version(VERSION, '-V, --version', 'print gnnctl\'s version')
    // Root options only before the subcommand: `export --version 5` is export's option, not the root's.
    .enablePositionalOptions()
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  const datasets = program.command('datasets').description('bundled synthetic data');
  datasets
    .command('synth')
    .description('write synthetic tables: H&M-shaped retail with planted graph signals, or a realism preset (date-only times, bursty sittings, a ratings schema)')
    .requiredOption('--out <dir>', 'output folder')
    .option('--preset <name>', 'retail (default) | retail-dates | bursty | ratings — schema and realism traits (datasets/README.md)')
    .addOption(new Option('--size <size>', "dataset size (default: the preset's; small for retail, tiny for bursty and ratings)").choices(['tiny', 'small', 'medium', 'large']))
    .addOption(typed('--seed <n>', 'random seed', intFlag('--seed', 0, 0xffffffff)).default(0))
    .addOption(new Option('--format <format>', 'file format').choices(['csv', 'parquet']).default('csv'))
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/synth.js')).synthCommand));

  datasets
    .command('synth-mesh')
    .description('write a synthetic service mesh (metrics, calls, events) with diurnal load, autoscaling churn and labelled incidents, plus an anomaly config')
    .requiredOption('--out <dir>', 'output folder')
    .addOption(typed('--services <n>', 'number of services', intFlag('--services', 10, 20000)).default(200))
    .addOption(typed('--hours <n>', 'hours simulated', intFlag('--hours', 2, 24 * 90)).default(72))
    .addOption(typed('--step <s>', 'seconds between snapshots', intFlag('--step', 10, 86400)).default(300))
    .addOption(typed('--seed <n>', 'random seed', intFlag('--seed', 0, 0xffffffff)).default(0))
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/synth_mesh.js')).synthMeshCommand as never));

  const graph = program.command('graph').description('build and inspect the relational graph');
  graph
    .command('build')
    .description('tables → graph artifact (node ids, time-sorted CSR per edge type, fitted encoders); cached by config and data')
    .addOption(opt.config())
    .addOption(opt.artifacts())
    .option('--force', 'rebuild even when a cached build exists')
    .option('-t, --task <name>', 'fit statistics up to this task\'s earliest validation anchor, as `train --task` does (default: the latest of the tasks\' cut-offs)')
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/graph.js')).graphBuildCommand as never));
  graph
    .command('inspect')
    .description('row counts, edge degree statistics and each column\'s encoder (builds the graph if needed)')
    .addOption(opt.config())
    .addOption(opt.artifacts())
    .option('-t, --task <name>', 'the graph `train --task` fits (default: statistics up to the latest of the tasks\' cut-offs)')
    .option('--features', 'also list the tree models\' inputs of the task (every binary/regression task without --task): each relational aggregate with its path, function, column, window and reason, and what features.max left out')
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
    .addOption(typed('--epochs <n>', 'override model.epochs', intFlag('--epochs', 1)))
    .option('--search', 'try the variant set (sampling last/uniform × layers 1/2 × encoder sage/gat, the configured model first) and keep the best on validation (as model.search: true)')
    .addOption(typed('--search-budget <duration>', 'wall-clock budget of the search, e.g. 10m, 90s, 1h (implies --search; default: model.search_budget, 10 minutes)', budgetFlag('--search-budget')))
    .addOption(opt.artifacts())
    .addOption(opt.failUnder())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/train.js')).trainCommand as never));

  const runs = program.command('runs').description('training and distillation runs');
  runs
    .command('list')
    .description('runs with task, status, the model each serves and its main test metric, and date')
    .option('-c, --config <file>', 'config (for its artifacts folder)')
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/runs.js')).runsListCommand as never));
  runs
    .command('show')
    .description('one run: status, validation and test metrics with intervals, and for binary/regression runs the GNN, trees and hybrid with the one kept')
    .argument('<run>', 'run id, folder, or latest:<task>')
    .option('-c, --config <file>', 'config (for its artifacts folder)')
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .action(
      action(async () => {
        const { runsShowCommand } = await import('./commands/runs.js');
        return (o: Opts) => runsShowCommand({ ...o, run: String((o._args as string[])[0]) });
      }),
    );

  program
    .command('embed')
    .description('batch embeddings of every entity of a table at an anchor time → embeddings.parquet')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'trained run (id, folder, or latest:<task>)')
    .option('--table <name>', 'table to embed (default: the task\'s entity table)')
    .addOption(typed('--anchor-time <time>', 'ISO time or "latest" (the newest time in the data)', timeFlag('--anchor-time', ['latest'])).default('latest'))
    .option('--out <path>', 'output file (default: artifacts/embeddings/<run>/<anchor>/embeddings.parquet)')
    .addOption(typed('--shard <i/n>', 'embed the i-th of n disjoint parts into a part file (e.g. $JOB_COMPLETION_INDEX/N)', shardFlag('--shard')))
    .addOption(new Option('--mode <mode>', 'exact: deterministic layer-wise over the training neighbourhoods; sampled: the training fanouts').choices(['exact', 'sampled']).default('exact'))
    .option('--allow-schema-drift', 'embed even when the data\'s schema differs from the run\'s')
    .addOption(typed('--workers <n>', 'worker threads computing the embeddings ("auto": 2 on wasm/cpu with 2+ cores); the file does not depend on it', workersFlag('--workers')).default('auto'))
    .addOption(publishOptions()[0]!)
    .addOption(publishOptions()[1]!)
    .addOption(publishOptions()[2]!)
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/embed.js')).embedCommand as never));

  program
    .command('predict')
    .description('the run\'s prediction (probability or value) for every entity of its task\'s table at an anchor time → predictions.parquet')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'trained run of an entity task (id, folder, or latest:<task>)')
    .option('--table <name>', 'the task\'s entity table (the only one a run predicts; default)')
    .addOption(typed('--anchor-time <time>', 'ISO time or "latest" (the newest time of the task\'s target table)', timeFlag('--anchor-time', ['latest'])).default('latest'))
    .option('--out <path>', 'output file (default: artifacts/predictions/<run>/<anchor>/<table>/predictions.parquet)')
    .addOption(typed('--shard <i/n>', 'predict the i-th of n disjoint parts into a part file (e.g. $JOB_COMPLETION_INDEX/N)', shardFlag('--shard')))
    .option('--with-embeddings', 'also write each entity\'s embedding (column `embedding`)')
    .option('--serve-model', 'write the GNN\'s predictions (ranking runs: its top-k) even when the run chose another model on validation (`chosen` in metrics.json: the trees, the hybrid, or a heuristic)')
    .addOption(typed('--mode <mode>', 'exact: deterministic layer-wise over the training neighbourhoods; sampled: the training fanouts', choiceFlag('--mode', ['exact', 'sampled'] as const)).default('exact'))
    .option('--allow-schema-drift', 'predict even when the data\'s schema differs from the run\'s')
    .addOption(typed('--workers <n>', 'worker threads computing the representations ("auto": 2 on wasm/cpu with 2+ cores); the file does not depend on it', workersFlag('--workers')).default('auto'))
    .addOption(publishOptions()[0]!)
    .addOption(publishOptions()[1]!)
    .addOption(publishOptions()[2]!)
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/predict.js')).predictCommand as never));

  program
    .command('evaluate')
    .description('score a trained run at any anchors from the labels its query defines (default: the run\'s own test anchors) → metrics with 95% intervals, per anchor')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'trained run of an entity task (id, folder, or latest:<task>)')
    .addOption(typed('--from <time>', 'first anchor; anchors step one window at a time while the window ends by --to', timeFlag('--from')))
    .addOption(typed('--to <time>', 'the last anchor\'s window ends by this time', timeFlag('--to')))
    .option('--anchors <times...>', 'explicit anchor times (ISO, comma- or space-separated)')
    .addOption(opt.failUnder())
    .option('--allow-schema-drift', 'evaluate even when the data\'s schema differs from the run\'s')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/evaluate.js')).evaluateCommand as never));

  program
    .command('distill')
    .description('train the shallow serving model from fact rows + base-run embeddings + recent interactions')
    .addOption(opt.config())
    .option('--base <run>', 'base (deep) run: id, folder or latest:<task> (default: latest run of distillation.base)')
    .option('--task <name>', 'serving task (default: distillation.task)')
    .option('--embeddings <path>', 'embedding snapshots (file, folder or glob); default: computed from the base run')
    .addOption(typed('--epochs <n>', 'override distillation.epochs', intFlag('--epochs', 1)))
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.failUnder())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/distill.js')).distillCommand as never));

  program
    .command('export')
    .description('distilled run → Triton model repository (config.pbtxt + ONNX with the embeddings inside); a train run that chose its trees → the tree ensemble over request features (docs/models.md)')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'distilled run, or a train run that chose its trees (model.kind gbdt): id, folder or latest:<task>')
    .option('--embeddings <path...>', 'embedding files/folders (default: embed each key table now with the base run)')
    .option('--out <dir>', 'model repository (default: artifacts/model_repository)')
    .option('--name <name>', 'model name (default: export.name)')
    .addOption(typed('--version <n>', 'version number (default: last + 1)', intFlag('--version', 1)))
    .addOption(typed('--quantize <mode>', 'entity tables as int8 with a scale per row (~4x smaller; the score and AUROC change go in the report), or none', choiceFlag('--quantize', ['none', 'int8'] as const)))
    .addOption(typed('--external-data <when>', 'entity tables in model.onnx.data beside model.onnx: auto (from 64 MiB), always, never, or a size like 16MiB', externalDataFlag('--external-data')))
    .option('--embeddings-from-store', 'entity embeddings as model inputs that `serve --online-store` fills from Redis per request, instead of tables inside the model (docs/online_store.md)')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/export.js')).exportCommand as never));

  const recommender = program.command('recommender').description('the session-aware distilled recommender of a ranking task: distill → export (then gnnctl serve)');
  recommender
    .command('distill')
    .description('train the session recommender from base-run user/item embeddings + the user\'s last interactions, with baselines and ablations')
    .addOption(opt.config())
    .option('--user-base <run>', 'run providing the user embeddings: id, folder or latest:<task> (default: latest run of session_recommender.user_base)')
    .option('--item-base <run>', 'run providing the item embeddings (default: latest run of session_recommender.item_base)')
    .addOption(typed('--epochs <n>', 'override session_recommender.epochs', intFlag('--epochs', 1)))
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/recommender.js')).recommenderDistillCommand as never));
  recommender
    .command('export')
    .description('session recommender run → Triton model repository (ONNX with embeddings and catalogue inside, top-k output)')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'session recommender run: id, folder or latest:<task>-session')
    .option('--out <dir>', 'model repository (default: artifacts/model_repository)')
    .option('--name <name>', 'model name (default: session_recommender.name)')
    .addOption(typed('--version <n>', 'version number (default: last + 1)', intFlag('--version', 1)))
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/recommender.js')).recommenderExportCommand as never));

  program
    .command('pipeline')
    .description('graph → train → embed → distill → export → serve smoke request; reuses unchanged stages')
    .addOption(opt.config())
    .option('--force', 'redo every stage even when its artifact exists')
    .addOption(typed('--epochs <n>', 'override the deep model\'s epochs', intFlag('--epochs', 1)))
    .addOption(typed('--distill-epochs <n>', 'override the student\'s epochs', intFlag('--distill-epochs', 1)))
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
    .option('--predict <run...>', 'also write batch predictions of these trained runs (e.g. latest:churn) at the same newest time; with nothing exported yet, only these')
    .option('--incremental', 'recompute only the entities whose receptive field saw new rows since the previous snapshot; keep the others (with their own anchor_time)')
    .addOption(publishOptions()[0]!)
    .addOption(publishOptions()[1]!)
    .addOption(publishOptions()[2]!)
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
    .addOption(typed('--now <time>', 'reference time: ISO time, or "clock" (default: newest data time with --config, else the clock)', timeFlag('--now', ['clock'])))
    .addOption(typed('--drift-threshold <psi>', 'with --config: a feature whose population stability index exceeds this fails the check', numberFlag('--drift-threshold', { above: 0 })).default(0.25))
    .addOption(typed('--drift-window <t>', 'with --config: the current window drift is measured on (time-stamped tables), e.g. 30d', secondsFlag('--drift-window')).default(30 * 86400, '30 days'))
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
    .addOption(typed('--port <n>', 'HTTP port (0 picks a free one)', intFlag('--port', 0, 65535)).default(8000))
    .addOption(typed('--grpc-port <n>', 'also serve KServe V2 over gRPC (inference.GRPCInferenceService) on this port, with the same models, auth and TLS (0 picks a free one)', intFlag('--grpc-port', 0, 65535)))
    .option('--online-store <url>', 'fill the embedding inputs of models exported with --embeddings-from-store from Redis (redis://HOST:PORT[/DB]), through an in-process LRU')
    .option('--online-store-prefix <p>', 'key prefix of the published keyspace', 'gnnctl')
    .addOption(typed('--online-store-lru <n>', 'embeddings kept in the in-process LRU', intFlag('--online-store-lru', 0, 100_000_000)).default(100_000))
    .addOption(typed('--online-store-deadline <t>', 'how long a request waits for Redis (e.g. 5ms); rows not fetched by then use the model\'s fallback row, counted in /metrics', secondsFlag('--online-store-deadline')).default(0.005, '5ms'))
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .addOption(typed('--poll-interval <t>', 'seconds between repository scans for new versions (e.g. 2, 500ms); 0 turns hot reload off', secondsFlag('--poll-interval')).default(2))
    .addOption(typed('--max-body-size <size>', 'largest request body, in bytes or e.g. 8MiB', bytesFlag('--max-body-size')).default(4 * 2 ** 20, '4MiB'))
    .addOption(new Option('--ort-thread <where>', 'where onnxruntime runs: a worker thread (model loads never stall requests) or the main thread (least CPU)').choices(['worker', 'main']).default('worker'))
    .addOption(typed('--ort-threads <n>', 'onnxruntime intra-op threads per session', intFlag('--ort-threads', 1, 64)).default(1))
    .addOption(typed('--shutdown-timeout <t>', 'seconds shutdown waits for in-flight requests before closing connections', secondsFlag('--shutdown-timeout')).default(30))
    .addOption(typed('--drain-delay <t>', 'on SIGTERM, seconds the listener keeps accepting (answering with Connection: close) while new connections arrive; it closes after 250 ms without one; 0: close at once', secondsFlag('--drain-delay')).default(5))
    .addOption(typed('--request-timeout <t>', 'deadline of an inference request that does not set Triton\'s `timeout` parameter (e.g. 10, 500ms); past it the answer is 504; 0: none', secondsFlag('--request-timeout')).default(10))
    .addOption(typed('--max-sequence-length <n>', 'cap on each variable input dimension (RTI sequence length) of inputs without a max_sequence_length:<input> parameter in config.pbtxt; longer requests get 400; 0: none', intFlag('--max-sequence-length', 0, 2 ** 31 - 1)).default(1024))
    .addOption(typed('--max-connections <n>', 'open connections at most; beyond it the oldest connection that has not sent a request is dropped (default: the open-file limit minus 10% headroom)', intFlag('--max-connections', 1, 10_000_000)))
    .addOption(typed('--max-connections-per-client <n>', 'open connections per client address at most; 0: no cap (clients behind one proxy share an address)', intFlag('--max-connections-per-client', 0, 10_000_000)).default(0))
    .addOption(typed('--headers-timeout <t>', 'seconds a new connection may take to send its request head before it is dropped', secondsFlag('--headers-timeout')).default(10))
    .addOption(typed('--idle-timeout <t>', 'seconds a keep-alive connection may stay idle between requests', secondsFlag('--idle-timeout')).default(30))
    .option('--auth-token-file <file>', 'require "Authorization: Bearer <token>" on every route; the file holds one token per line (several: rotation)')
    .option('--auth-open-health', 'with --auth-token-file: leave /v2/health/live and /v2/health/ready open for probes')
    .option('--auth-open-metrics', 'with --auth-token-file: leave /metrics open for scrapers without credentials')
    .option('--tls-cert <file>', 'PEM certificate (chain): serve HTTPS (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/serve.js')).serveCommand as never));

  const rollout = program
    .command('rollout')
    .description('canary rollouts of a served model: start a canary at a share of the requests, ramp it, promote or roll it back; written to <model>/rollout.json, which a running gnnctl serve picks up at its next poll');
  const rolloutTarget = (c: Command) =>
    c
      .requiredOption('--model-repository <dir>', 'Triton model repository')
      .requiredOption('--model <name>', 'model name (its folder)')
      .addOption(opt.json())
      .addOption(opt.quiet());
  const rolloutAction = (name: string) =>
    action(async () => {
      const { rolloutCommand } = await import('./commands/rollout.js');
      return (o: Opts) => rolloutCommand({ ...o, action: name as never });
    });
  rolloutTarget(rollout.command('pin').description('serve one version only, so a new export waits for `rollout start` instead of taking all requests'))
    .option('--stable <version>', 'the version to keep serving (default: the newest complete one)')
    .action(rolloutAction('pin'));
  rolloutTarget(rollout.command('start').description('send a share of the requests to a canary version'))
    .requiredOption('--canary <version>', 'the new version')
    .option('--weight <w>', 'its share of requests without a version (0..1 or a percentage)', '0.1')
    .option('--stable <version>', 'the version keeping the rest (default: the one serving now)')
    .action(rolloutAction('start'));
  rolloutTarget(rollout.command('set').description('change the canary\'s share of requests')).requiredOption('--weight <w>', 'share of requests (0..1 or a percentage)').action(rolloutAction('set'));
  rolloutTarget(rollout.command('promote').description('the canary takes all requests (pinned as the stable version)')).action(rolloutAction('promote'));
  rolloutTarget(rollout.command('rollback').description('the stable version takes all requests back; the canary is unloaded')).action(rolloutAction('rollback'));
  rolloutTarget(rollout.command('status').description('the rollout in the repository')).action(rolloutAction('status'));
  rolloutTarget(rollout.command('end').description('remove the rollout file: the version policy chooses again')).action(rolloutAction('end'));

  const anomaly = program.command('anomaly').description('graph-autoencoder anomaly detection on service dependency graphs (TAGAE): fit → score → watch');
  anomaly
    .command('fit')
    .description('train on the period taken as normal and calibrate the threshold; writes artifacts/runs/<id>/')
    .addOption(opt.config())
    .addOption(typed('--from <time>', 'first snapshot of the normal period (default: anomaly.fit_from, else the first)', timeFlag('--from')))
    .addOption(typed('--until <time>', 'end of the normal period, exclusive (default: anomaly.fit_until, else the end of the data)', timeFlag('--until')))
    .addOption(typed('--epochs <n>', 'override anomaly.epochs', intFlag('--epochs', 1)))
    .option('--init-from <run>', 'fine-tune: start from this anomaly run\'s weights and feature statistics (run id, folder or latest)')
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/anomaly.js')).anomalyFitCommand as never));
  anomaly
    .command('score')
    .description('score snapshots → Parquet (ts, score, threshold, alert, top_services, top_edges); with labels, precision/recall against the baselines')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'anomaly run: id, folder or latest')
    .addOption(typed('--from <time>', 'first snapshot scored (default: the end of the run\'s normal period)', timeFlag('--from')))
    .addOption(typed('--to <time>', 'score snapshots before this time (default: all)', timeFlag('--to')))
    .option('--out <file>', 'output Parquet file (default: <run dir>/scores.parquet)')
    .addOption(typed('--runtime <runtime>', 'onnx: the run\'s model/tagae.onnx in onnxruntime (default, a few ms per snapshot); tfjs: the TF.js model', choiceFlag('--runtime', ['onnx', 'tfjs'] as const)))
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/anomaly.js')).anomalyScoreCommand as never));
  anomaly
    .command('watch')
    .description('score new snapshots as the tables grow (or from Prometheus); window state on disk survives restarts; /metrics and Alertmanager alerts')
    .addOption(opt.config())
    .requiredOption('-r, --run <run>', 'anomaly run: id, folder or latest')
    .addOption(typed('--interval <t>', 'time between polls (e.g. 15s, 1m)', secondsFlag('--interval')).default('15s'))
    .option('--prometheus <url>', 'read snapshots from this Prometheus HTTP API (query_range) instead of the tables')
    .option('--alertmanager <url>', 'POST alerts to this Alertmanager (…/api/v2/alerts)')
    .addOption(typed('--port <n>', 'port of /metrics (0 picks a free one)', intFlag('--port', 0, 65535)).default(9464))
    .option('--host <host>', 'address /metrics listens on', '127.0.0.1')
    .option('--state-file <file>', 'window state file (default: <run dir>/watch_state.json)')
    .addOption(typed('--max-ticks <n>', 'stop after this many polls (default: run until SIGINT/SIGTERM)', intFlag('--max-ticks', 1)))
    .addOption(typed('--runtime <runtime>', 'onnx: the run\'s model/tagae.onnx in onnxruntime (default, a few ms per snapshot); tfjs: the TF.js model', choiceFlag('--runtime', ['onnx', 'tfjs'] as const)))
    .addOption(opt.backend())
    .addOption(opt.artifacts())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/anomaly.js')).anomalyWatchCommand as never));

  const bench = program.command('bench').description('benchmarks of gnnctl\'s stages');
  bench
    .command('serve')
    .description('open-loop constant-rate load against a KServe V2 server (gnnctl serve or Triton): offered and achieved QPS, latency percentiles from the scheduled send time, errors by kind')
    .requiredOption('--url <url>', 'server base URL, e.g. http://127.0.0.1:8000')
    .requiredOption('--model <name>', 'model name')
    .option('--model-version <v>', 'model version (default: the server\'s latest)')
    .addOption(typed('--rate <qps>', 'requests per second offered (with --sweep auto: the first step)', numberFlag('--rate', { above: 0 })))
    .addOption(typed('--duration <s>', 'seconds of measured load (per step with --sweep)', secondsFlag('--duration')).makeOptionMandatory())
    .addOption(typed('--warmup <s>', 'seconds of load before the measured window', secondsFlag('--warmup')).default(0))
    .addOption(typed('--concurrency <n>', 'most connections open at once', intFlag('--concurrency', 1)).default(64))
    .addOption(typed('--pool <n>', 'distinct pre-built requests', intFlag('--pool', 2)).default(512))
    .addOption(typed('--max-sequence <n>', 'longest RTI sequence', intFlag('--max-sequence', 0)).default(32))
    .option('--keys <file...>', 'known keys: embeddings.parquet files (each feeds the input named like its key column) or a text file with one key per line')
    .addOption(typed('--known-key-rate <r>', 'share of requests with a known key (with --keys)', numberFlag('--known-key-rate', { min: 0, max: 1 })).default(0.9))
    .addOption(typed('--seed <n>', 'random seed', intFlag('--seed', 0)).default(1))
    .addOption(new Option('--client <kind>', 'the generator\'s client: raw (lean keep-alive HTTP/1.1; lean HTTP/2 with --protocol grpc) or node (http.Agent; @grpc/grpc-js with --protocol grpc)').choices(['raw', 'node']).default('raw'))
    .addOption(new Option('--protocol <p>', 'send the requests over KServe V2 HTTP or gRPC (ModelInfer with raw contents; metadata and /metrics still come from --url)').choices(['http', 'grpc']).default('http'))
    .option('--grpc-address <host:port>', 'with --protocol grpc: the gRPC endpoint (default: the --url host, port 8001)')
    .option('--sequence-lengths <list>', 'RTI lengths of the generated requests, e.g. 4,8,16,32 (Kumo\'s benchmark), instead of 0..--max-sequence')
    .option('--write-payloads <dir>', 'write the generated requests as files (one JSON request each) and exit without load')
    .option('--payloads <dir>', 'send these pre-generated request files (*.json) instead of generating requests')
    .option('--sweep <rates>', 'step the offered rate: "auto" (from --rate ×1.5 per step until the server falls behind) or a list, e.g. 500,1000,2000,4000; prints latency against load')
    .addOption(typed('--p99-target <ms>', 'with --sweep: the p99 a step must stay within', numberFlag('--p99-target', { above: 0 })).default(10))
    .option('--chart <file.svg>', 'with --sweep: also write the latency-against-load chart as SVG')
    .addOption(opt.json())
    .action(action(async () => (await import('./commands/bench.js')).benchServeCommand as never));

  program
    .command('doctor')
    .description('show the tensor backend in use and why others were skipped, a matmul speed probe, and whether DuckDB and onnxruntime-node work')
    .addOption(opt.backend())
    .addOption(opt.json())
    .addOption(opt.quiet())
    .action(action(async () => (await import('./commands/doctor.js')).doctorCommand as never));

  addExamples(program);
  return program;
}

/**
 * A reader that stops early (`gnnctl embed --help | head`, `… --json | head -c 100`) closes the pipe: stop
 * quietly, as Unix tools do, instead of a stack trace from the unhandled EPIPE. Whatever the command wrote
 * to disk is complete by then (results are printed last).
 */
export function quietOnClosedPipe(stream: NodeJS.WriteStream, exit: (code: number) => void = (c) => process.exit(c)): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') exit(ExitCode.ok);
    else throw e;
  });
}

let pipeWatched = false;

export async function main(argv: string[]): Promise<number> {
  if (!pipeWatched) quietOnClosedPipe(process.stdout);
  pipeWatched = true;
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version exit 0; a usage error (unknown flag, bad value) is a config-class error.
      if (e.exitCode === 0) return ExitCode.ok;
      // commander already wrote the message to stderr; --json callers also get it as the result object.
      if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({ error: 'UsageError', message: e.message.replace(/^error: /, ''), code: e.code, exit_code: ExitCode.config })}\n`);
      return ExitCode.config;
    }
    return reportError(e);
  }
}
