/** The deep ranking model's former module name, kept while train/ranking_{trainer,baselines,heuristics}.ts are edited in parallel: import context_gnn.js. */
export * from './context_gnn.js';
