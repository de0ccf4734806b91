"""An example worker written for the official RunPod Python SDK (`pip install runpod`).

Wharf runs it unchanged: the SDK reads the RUNPOD_WEBHOOK_* variables Wharf injects and speaks the worker protocol.
Input:  {"name": "you"}                 -> {"greeting": "hello you", "echo": {...}}
        {"name": "you", "fail": "why"}  -> the job FAILS with that message
"""
import runpod


def handler(job):
    job_input = job["input"]
    if job_input.get("fail"):
        raise ValueError(str(job_input["fail"]))
    runpod.serverless.progress_update(job, "working")
    return {"greeting": f"hello {job_input.get('name', 'world')}", "echo": job_input}


if __name__ == "__main__":
    runpod.serverless.start({"handler": handler})
