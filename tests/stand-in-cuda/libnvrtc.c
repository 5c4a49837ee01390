/* A stand-in NVRTC that is not one, for tests without the CUDA toolkit (tests/cli_plan.rs):
 * it has `nvrtcVersion` (12.4) and none of the other functions the runner calls, or, built
 * with -DNOTHING, not even that, as a library of another version or another program under
 * NVRTC's name would. The runner must say what it lacks, not fail inside cudarc.
 * Built by the test: cc -shared -fPIC [-DNOTHING] -o libnvrtc.so libnvrtc.c */

#ifndef NOTHING
int nvrtcVersion(int *major, int *minor) {
    *major = 12;
    *minor = 4;
    return 0;
}
#endif

/* A translation unit must declare something. */
int stand_in_nvrtc_is_not_nvrtc(void) { return 1; }
