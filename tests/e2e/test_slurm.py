"""Issue #10 (in part): a launcher inside a Slurm step finds the nodes and itself from Slurm's
variables (docs/slurm.md). No real Slurm here yet: each node's launcher gets the variables srun
sets for a 2-node step with --ntasks-per-node=1, in its own network namespace with host names
in /etc/hosts (label netns)."""
from test_multinode import NetnsTestCase

NODES = {"snode01": 0, "snode02": 1}


class SlurmVariablesTest(NetnsTestCase):
    HOSTS = NODES
    DOCKER_IN = None

    def slurm_env(self, node, **extra):
        variables = dict(SLURM_JOB_ID="42", SLURM_STEP_ID="0", SLURM_STEP_NODELIST="snode[01-02]",
                         SLURM_JOB_NODELIST="snode[01-02]", SLURM_NODEID=str(node),
                         SLURM_STEP_NUM_NODES="2", SLURM_NNODES="2",
                         SLURM_STEP_TASKS_PER_NODE="1(x2)", SLURM_LOCALID="0",
                         SLURM_PROCID=str(node))
        variables.update(extra)
        return self.env(**variables)

    def test_two_node_step_forms_one_world(self):
        args = ["--nproc_per_node", 2] + self.mesh_args()
        results = self.run_nodes([args, args], envs=[self.slurm_env(0), self.slurm_env(1)])
        self.assert_ok(results)
        endpoints = [f"{self.ip(n)}:{6070 + i}" for n in range(2) for i in range(2)]
        records = self.assert_full_mesh(endpoints)
        self.assertEqual(records[0]["env"]["MASTER_ADDR"], self.ip(0))
        self.assertEqual(records[0]["env"]["PADDLE_MASTER"], f"{self.ip(0)}:6072")
        for node in (0, 1):
            self.assertIn(f"Slurm step of 2 nodes [snode01, snode02] (SLURM_STEP_NODELIST); this "
                          f"node is snode0{node + 1} ({self.ip(node)}), SLURM_NODEID {node}",
                          results[node].stderr)

    def test_explicit_ips_win_over_slurm(self):
        args = ["--ips", self.ip(1), "--nproc_per_node", 1] + self.mesh_args()
        result = self.finish(self.start_on(1, args, env=self.slurm_env(1)))
        self.assert_ok([result])
        self.assertNotIn("Slurm step", result.stderr)

    def test_several_tasks_per_node_are_refused(self):
        env = self.slurm_env(0, SLURM_STEP_TASKS_PER_NODE="2(x2)")
        result = self.finish(self.start_on(0, self.mesh_args(), env=env))
        self.assertEqual(result.code, 1, result)
        self.assertRegex(result.stderr.splitlines()[-1],
                         r"^launch: error: this Slurm step runs 2 tasks on a node .*"
                         r"--ntasks-per-node=1")
        self.assertEqual(list(self.rec.iterdir()), [])


if __name__ == "__main__":
    import harness
    harness.main()
