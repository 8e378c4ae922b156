/** The graph most model-level tests run on: tiny synthetic data under `pipelineConfig()`, built and loaded. */
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { pipelineConfig } from './pipeline.js';
import { tinySynth, type SynthFixture } from './synth.js';

/** The caller runs `fx.cleanup()`. */
export async function tinyPipelineGraph(): Promise<{ fx: SynthFixture; graph: Graph }> {
  const fx = await tinySynth(pipelineConfig());
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  return { fx, graph: Graph.load((await buildGraph(cfg)).dir) };
}
