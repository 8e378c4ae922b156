/**
 * A student worker (see student_pool.ts): `trainStudent` on its own TF.js instance, over the run's
 * examples, embeddings and RTI lists shared with the main thread, one student per `train` message. Its
 * progress goes to the main thread as events, which draws one line for all the students.
 */
import { parentPort } from 'node:worker_threads';
import { selectBackend } from '../compute/backend.js';
import { setQuiet } from '../core/log.js';
import { Graph } from '../graph/graph.js';
import { StudentFeatures, type StudentData } from '../model/student/features.js';
import { objectiveFor, type Objective } from '../task/objective/objective.js';
import { relayProgress, vectorsFromShared, type StudentJob, type StudentWorkerInit } from './student_pool.js';
import { trainStudent } from './student_training.js';

let run: { init: StudentWorkerInit; data: StudentData; features: StudentFeatures; objective: Objective } | null = null;

setQuiet(true);

parentPort!.on('message', async (msg: { id: number; type: string } & Record<string, unknown>) => {
  try {
    if (msg.type === 'init') {
      const init = msg.init as StudentWorkerInit;
      await selectBackend(init.backend);
      const data: StudentData = { ...init.data, embeddings: init.data.embeddings.map((e) => ({ values: vectorsFromShared(e.values), missing: e.missing })) };
      run = { init, data, features: new StudentFeatures(Graph.fromShared(init.graph), init.spec), objective: objectiveFor(init.objective) };
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    if (!run) throw new Error('worker used before init');
    if (msg.type !== 'train') throw new Error(`unknown message ${msg.type}`);
    const { init, data, features, objective } = run;
    const job = msg.job as StudentJob;
    const s = trainStudent({ ...init.spec, ...job.variant }, features, data, init.labels, init.ranges, objective, init.teacher, job.kdWeight, {
      ...init.options,
      epochs: job.epochs,
      trainRows: job.trainRows,
      label: job.name,
      progress: relayProgress((e) => parentPort!.postMessage(e), msg.index as number),
    });
    const { model, ...result } = s;
    model.dispose();
    parentPort!.postMessage({ id: msg.id, result }, [result.testPred.buffer as ArrayBuffer, result.valPred.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
