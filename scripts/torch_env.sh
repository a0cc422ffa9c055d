# Sourced by scripts/libtorch.sh and scripts/pytorch.sh: the pinned version, the Python packages the tests read
# beside torch, and helpers that check a torch environment in hearth's cache.
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

torch_version="2.13.0"
python_extras=(safetensors numpy "pyarrow==22.0.0")

# The libtorch directory (include/ and lib/) inside the environment at $1; exits naming the damage when its
# libtorch_cpu.so is missing.
libtorch_of() {
    local site
    site="$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$site/torch"
}
check_libtorch() {
    local libtorch
    libtorch="$(libtorch_of "$1")"
    if [[ ! -f "$libtorch/lib/libtorch_cpu.so" ]]; then
        say "$libtorch/lib/libtorch_cpu.so is missing: the cache at $1 is damaged; delete it and run this again."
        exit 1
    fi
}
