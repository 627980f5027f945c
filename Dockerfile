# berth-controller image: build on Debian 12 with the same packages and CMake as hack/deps.sh and
# hack/test.sh, run on debian:12-slim with only the shared libraries the binary links to.
#   docker build -t berth:dev .
# hack/check-image-libs.sh checks the runtime stage against the binary (ldd + dpkg -S): keep the
# runtime stage's `apt-get install` list in the one-package-per-word form it parses.

FROM debian:12 AS build
ARG DEBIAN_FRONTEND=noninteractive
# The C++ build packages of hack/deps.sh (GoogleTest and Google Benchmark too: the top-level
# CMakeLists.txt requires them even when only berth-controller is built).
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libcpprest-dev rapidjson-dev libyaml-cpp-dev libssl-dev prometheus-cpp-dev \
      libgtest-dev libgmock-dev libbenchmark-dev libspdlog-dev libfmt-dev libboost-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# -Werror on (CMakeLists.txt turns off GCC 12's false -Wrestrict positives, GCC bug 105329).
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBERTH_WERROR=ON \
 && targets=berth-controller \
 && if ninja -C /build -t targets all | grep -q '^kubectl-berth:'; then targets="$targets kubectl-berth"; fi \
 && cmake --build /build --target $targets \
 && mkdir -p /out \
 && for t in $targets; do f=$(find /build/src -type f -name "$t" -perm -u+x | head -n1); install -m 0755 -s "$f" "/out/$t"; done

FROM debian:12-slim AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libcpprest2.10 libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 berth \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin berth
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/berth-controller"]
