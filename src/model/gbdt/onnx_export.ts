/**
 * A trained ensemble as an ONNX graph of one `ai.onnx.ml` tree operator: `TreeEnsembleClassifier` (post
 * transform LOGISTIC) for the binary loss, `TreeEnsembleRegressor` (SUM) for l1, l2 and lambdarank.
 *
 * Input `features` FLOAT [batch, F], NaN for missing; output `probability` [batch] (binary) or
 * `prediction` [batch] (others). A numeric node is `BRANCH_LEQ` on the float32 bin edge with
 * `missing_value_tracks_true` = the node's missing direction, which is the model's own rule (bin_mapper.ts
 * compares float32 values). A categorical node becomes a chain of `BRANCH_EQ` nodes, one per category of
 * the smaller side to enumerate: the left set when missing and unseen categories go right, else the known
 * categories going right, so the chain's fall-through takes NaN and unseen codes where the model sends them.
 * The chain's true branches all point at the same child (the tree operators follow node ids, so a child
 * may have several parents). The classic operators (ai.onnx.ml 3) take no set-membership mode, and
 * onnxruntime-node runs them everywhere Triton does.
 */
import { attr, ML_DOMAIN, OnnxGraphBuilder } from '../../artifacts/onnx/index.js';
import { MISSING_BIN } from './bin_mapper.js';
import type { GbdtModel } from './gbdt_model.js';

export interface GbdtOnnxOptions {
  /** Input tensor name. Default `features`. */
  inputName?: string;
  /** Output name. Default `probability` (binary) or `prediction`. */
  outputName?: string;
  /** Graph name. Default `gnnctl_gbdt`. */
  graphName?: string;
  /**
   * Output shape: `vector` [batch] (default) or `column` [batch, 1], the shape of a Triton output with
   * dims [1] under batching (the exported students' score has it too).
   */
  outputShape?: 'vector' | 'column';
}

interface FlatNodes {
  treeIds: number[];
  nodeIds: number[];
  featureIds: number[];
  modes: string[];
  values: number[];
  trueIds: number[];
  falseIds: number[];
  missingTrue: number[];
  leafTree: number[];
  leafNode: number[];
  leafWeight: number[];
}

/** The ONNX model as bytes. */
export function gbdtToOnnx(model: GbdtModel, opts: GbdtOnnxOptions = {}): Uint8Array {
  return gbdtOnnxGraph(model, opts).toBytes();
}

/** The ONNX graph, for callers that add metadata or write it with `toFiles`. */
export function gbdtOnnxGraph(model: GbdtModel, opts: GbdtOnnxOptions = {}): OnnxGraphBuilder {
  const F = model.featureNames.length;
  const binary = model.lossName === 'binary';
  const flat = flatten(model);
  const g = new OnnxGraphBuilder({ graphName: opts.graphName ?? 'gnnctl_gbdt', docString: `gnnctl gradient-boosted trees (${model.lossName}, ${model.trees.length} trees)` });
  g.setMetadata('feature_names', JSON.stringify(model.featureNames));
  g.setMetadata('loss', model.lossName);
  const x = g.addInput(opts.inputName ?? 'features', 'FLOAT', ['batch', F]);
  const nodeAttrs = {
    nodes_treeids: attr.ints(flat.treeIds),
    nodes_nodeids: attr.ints(flat.nodeIds),
    nodes_featureids: attr.ints(flat.featureIds),
    nodes_modes: attr.strings(flat.modes),
    nodes_values: attr.floats(flat.values),
    nodes_truenodeids: attr.ints(flat.trueIds),
    nodes_falsenodeids: attr.ints(flat.falseIds),
    nodes_missing_value_tracks_true: attr.ints(flat.missingTrue),
    base_values: attr.floats([model.baseline]),
  };
  const outName = opts.outputName ?? (binary ? 'probability' : 'prediction');
  const column = opts.outputShape === 'column';
  // Axis 1 for Slice and Squeeze; a column regressor needs neither (an unused initializer draws a warning).
  const axes = binary || !column ? g.constant(BigInt64Array.from([1n]), [1]) : '';
  if (binary) {
    const [, probs] = g.addNode('TreeEnsembleClassifier', [x], 2, {
      domain: ML_DOMAIN,
      attributes: {
        ...nodeAttrs,
        classlabels_int64s: attr.ints([0, 1]),
        class_treeids: attr.ints(flat.leafTree),
        class_nodeids: attr.ints(flat.leafNode),
        class_ids: attr.ints(flat.leafTree.map(() => 0)),
        class_weights: attr.floats(flat.leafWeight),
        post_transform: attr.string('LOGISTIC'),
      },
    });
    // One score column with two labels: onnxruntime returns [1 − p, p]; keep p.
    const start = g.constant(BigInt64Array.from([1n]), [1]);
    const end = g.constant(BigInt64Array.from([2n]), [1]);
    const p = g.op('Slice', [probs!, start, end, axes]);
    g.addOutput(outName, 'FLOAT', column ? ['batch', 1] : ['batch'], { from: column ? p : g.op('Squeeze', [p, axes]) });
  } else {
    const y = g.op(
      'TreeEnsembleRegressor',
      [x],
      {
        ...nodeAttrs,
        n_targets: attr.int(1),
        target_treeids: attr.ints(flat.leafTree),
        target_nodeids: attr.ints(flat.leafNode),
        target_ids: attr.ints(flat.leafTree.map(() => 0)),
        target_weights: attr.floats(flat.leafWeight),
        aggregate_function: attr.string('SUM'),
      },
      { domain: ML_DOMAIN },
    );
    g.addOutput(outName, 'FLOAT', column ? ['batch', 1] : ['batch'], { from: column ? y : g.op('Squeeze', [y, axes]) });
  }
  return g;
}

function flatten(model: GbdtModel): FlatNodes {
  const out: FlatNodes = { treeIds: [], nodeIds: [], featureIds: [], modes: [], values: [], trueIds: [], falseIds: [], missingTrue: [], leafTree: [], leafNode: [], leafWeight: [] };
  const push = (tree: number, id: number, feature: number, mode: string, value: number, t: number, f: number, missingTrue: number): void => {
    out.treeIds.push(tree);
    out.nodeIds.push(id);
    out.featureIds.push(feature);
    out.modes.push(mode);
    out.values.push(value);
    out.trueIds.push(t);
    out.falseIds.push(f);
    out.missingTrue.push(missingTrue);
  };
  model.trees.forEach((tree, ti) => {
    // Tree node k keeps id k; categorical chains take ids after the last tree node.
    let nextId = tree.nodes;
    for (let k = 0; k < tree.nodes; k++) {
      const f = tree.feature[k]!;
      if (f < 0) {
        push(ti, k, 0, 'LEAF', 0, 0, 0, 0);
        out.leafTree.push(ti);
        out.leafNode.push(k);
        out.leafWeight.push(tree.value[k]!);
        continue;
      }
      const l = tree.left[k]!;
      const r = tree.right[k]!;
      const cat = tree.catLeft.get(k);
      if (!cat) {
        push(ti, k, f, 'BRANCH_LEQ', model.mapper.values[f]![tree.bin[k]!]!, l, r, tree.missingLeft[k]!);
        continue;
      }
      const categories = model.mapper.values[f]!;
      const missingLeft = cat[MISSING_BIN] === 1;
      // Enumerate the side the fall-through is not: then NaN and unseen codes fall where the model sends them.
      const listed: number[] = [];
      for (let b = 0; b < categories.length; b++) if ((cat[b] === 1) !== missingLeft) listed.push(categories[b]!);
      const [hit, miss] = missingLeft ? [r, l] : [l, r];
      if (listed.length === 0) {
        // Every known category falls through: a test no value passes (NaN never equals) keeps the shape.
        push(ti, k, f, 'BRANCH_EQ', NaN, hit, miss, 0);
        continue;
      }
      const ids = listed.map((_, j) => (j === 0 ? k : nextId++));
      listed.forEach((c, j) => push(ti, ids[j]!, f, 'BRANCH_EQ', c, hit, j + 1 < listed.length ? ids[j + 1]! : miss, 0));
    }
  });
  return out;
}
