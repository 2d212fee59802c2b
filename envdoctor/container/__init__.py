"""Container builds judged as machines: a Dockerfile's final stage (or a compose service's build) is
read into partial Facts and diagnosed with the same rules as `envdoctor check`.

    parse.py        the Dockerfile, through BuildKit's own parser (the `dockerfile` package)
    shell.py        a RUN line's shell words -> install steps (pip / uv / conda / apt / source builds)
    base_images.py  matrices/base_images.toml: what a base image contains
    to_facts.py     the final stage -> a described machine (a Facts dict) + where each fact came from
    findings.py     the findings only a build file has (system libraries, nvcc, ENV lines, host driver)
    judge.py        parse -> facts -> complete -> diagnose -> located findings
    compose.py      compose files (PyYAML), each service's GPU access, /dev/shm, and its build
"""
