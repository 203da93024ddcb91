import os, sys, time
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/exp/inductor-aoti")
import torch, timm
name=sys.argv[1]; pkg=f"/tmp/exp/{name}.pt2"; os.makedirs("/tmp/exp", exist_ok=True)
m=timm.create_model(name, pretrained=False).eval()
x=torch.randn(2,3,224,224)
if not os.path.exists(pkg):
    t=time.perf_counter()
    with torch.inference_mode():
        ep=torch.export.export(m,(x,),dynamic_shapes={"x":{0:torch.export.Dim("batch",min=1,max=64)}})
    t1=time.perf_counter()
    torch._inductor.aoti_compile_and_package(ep, package_path=pkg)
    print("export",round(t1-t,2),"compile",round(time.perf_counter()-t1,2), flush=True)
t=time.perf_counter(); f=torch._inductor.aoti_load_package(pkg); print("load",round(time.perf_counter()-t,2))
with torch.inference_mode():
    for b in (1,8,16,1):
        t=time.perf_counter(); y=f(torch.zeros(b,3,224,224)); print(b, round(time.perf_counter()-t,3), end="; ")
    ref=m(x); print("maxdiff", (f(x)-ref).abs().max().item())
    import timeit
    for b in (1,8):
        xb=torch.randn(b,3,224,224)
        c=torch.compile(m); c(xb); c(xb)
        print(f"b{b} aoti", min(timeit.repeat(lambda: f(xb), number=5, repeat=5))/5, "jit", min(timeit.repeat(lambda: c(xb), number=5, repeat=5))/5, "eager", min(timeit.repeat(lambda: m(xb), number=5, repeat=5))/5)
