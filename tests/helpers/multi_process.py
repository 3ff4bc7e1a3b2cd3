"""The trainer of Paddle's launcher shell tests (docs/design.md, "Paddle's own launcher tests").

    multi_process.py PREFIX          print the line below and write it to
                                     multi_process_PREFIX.check_ID.log (in the working directory)
    multi_process.py PREFIX abort    trainer 0 writes "abort>>> " + the line and exits 1 at once;
                                     every other trainer sleeps 30 s and only then writes its file

The line: "selected_gpus:G worker_endpoints:EPS trainers_num:N current_endpoint:EP trainer_id:ID"
from FLAGS_selected_gpus, PADDLE_TRAINER_ENDPOINTS (N = its number of entries),
PADDLE_CURRENT_ENDPOINT and PADDLE_TRAINER_ID.
"""
import os
import sys
import time


def line():
    endpoints = os.environ["PADDLE_TRAINER_ENDPOINTS"]
    return (f"selected_gpus:{os.environ.get('FLAGS_selected_gpus')} "
            f"worker_endpoints:{endpoints} trainers_num:{len(endpoints.split(','))} "
            f"current_endpoint:{os.environ['PADDLE_CURRENT_ENDPOINT']} "
            f"trainer_id:{int(os.environ['PADDLE_TRAINER_ID'])}")


def report(prefix, text):
    print(text, flush=True)
    with open(f"multi_process_{prefix}.check_{os.environ['PADDLE_TRAINER_ID']}.log", "w") as f:
        f.write(text)


def main():
    prefix = sys.argv[1]
    if sys.argv[2:] != ["abort"]:
        report(prefix, line())
        return 0
    if int(os.environ["PADDLE_TRAINER_ID"]) == 0:
        report(prefix, "abort>>> " + line())
        return 1
    time.sleep(30)  # the launcher must have killed this trainer long before
    report(prefix, line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
