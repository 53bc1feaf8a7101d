from kernel_mcp.launch import main

main()
