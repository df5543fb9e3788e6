// What `admin create-config --engine openvm` must refuse: configs cargo-openvm
// cannot serve (a pre-release or unknown openvm version) or cannot key (public
// values or memory dimensions other than keygen's defaults). The rules and their
// v2.0.1 sources live with the agent's command-line mapping, which applies the
// same rules at `setup-config` and at claim time; this is the Worker's name for them.
export { openvmConfigProblems } from '../../prover-agent/src/engine/openvm/commands.ts';
