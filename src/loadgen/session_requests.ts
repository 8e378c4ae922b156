/**
 * KServe V2 JSON bodies for the session recommender (what a feed service sends `gnnctl serve` or Triton):
 * the user's key, the request time and the session's last interactions; candidates only when given (gnnctl
 * serve reads an omitted list as the whole catalogue; Triton needs `candidates` sent with shape [1, 0]).
 * 64-bit integers are written as JSON integers, exactly.
 */
import { CANDIDATES_INPUT, keyElemType } from '../export/session_onnx.js';
import type { SessionRequest } from '../model/student/session_features.js';
import type { SessionSpec } from '../model/student/session_spec.js';

export function sessionInferBody(spec: SessionSpec, r: SessionRequest, opts: { candidates?: (string | bigint)[]; explicitEmptyCandidates?: boolean } = {}): string {
  const itemDt = keyElemType(spec.item.type) === 'INT64' ? 'INT64' : 'BYTES';
  const userDt = keyElemType(spec.user.type) === 'INT64' ? 'INT64' : 'BYTES';
  const val = (v: string | bigint): string => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v));
  const n = r.items.length;
  const inputs = [
    `{"name":"anchor_time","datatype":"INT64","shape":[1,1],"data":[${r.anchor_ns}]}`,
    `{"name":${JSON.stringify(`${spec.user.table}.${spec.user.column}`)},"datatype":"${userDt}","shape":[1,1],"data":[${val(r.user)}]}`,
  ];
  if (spec.use_rti) {
    const p = spec.session.path;
    inputs.push(
      `{"name":${JSON.stringify(`${p}:${spec.session.time_column}`)},"datatype":"INT64","shape":[1,${n},1],"data":[${r.times_ns.join(',')}]}`,
      `{"name":${JSON.stringify(`${p}:${spec.session.item_column}`)},"datatype":"${itemDt}","shape":[1,${n},1],"data":[${r.items.map(val).join(',')}]}`,
    );
  }
  const c = opts.candidates ?? (opts.explicitEmptyCandidates ? [] : undefined);
  if (c) inputs.push(`{"name":"${CANDIDATES_INPUT}","datatype":"${itemDt}","shape":[1,${c.length}],"data":[${c.map(val).join(',')}]}`);
  return `{"inputs":[${inputs.join(',')}]}`;
}
